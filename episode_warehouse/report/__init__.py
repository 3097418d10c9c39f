"""Small pictures and checks for people looking at a partition (the Dagster UI shows them)."""
