"""docs/catalog.md shows the schema the code defines."""

from pathlib import Path

from episode_warehouse.catalog.schema import EPISODES, schema_markdown


def test_docs_match_schema():
    doc = (Path(__file__).parents[3] / "docs" / "catalog.md").read_text()
    assert schema_markdown() in doc


def test_view_ddl_casts_every_column_in_order():
    sql = EPISODES.view_sql("/x/*/*.parquet")
    positions = [sql.index(f'AS "{c.name}"') for c in EPISODES.columns]
    assert positions == sorted(positions)
    assert "read_parquet('/x/*/*.parquet', union_by_name = true)" in sql
