"""The ``warehouse`` command line (Dagster-aware, so it lives outside the domain package)."""
