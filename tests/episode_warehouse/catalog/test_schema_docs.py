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


def test_rows_written_before_a_column_existed_still_query(tmp_path):
    """A catalog whose every file predates a column (the quality signals of #43) queries, the
    column NULL, until its partitions are rebuilt: before, every query failed to bind."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    old = pa.table({"source": ["atari"], "partition": ["Pong/1"], "episode": [0], "length": [5]})
    pq.write_table(old, tmp_path / "old.parquet")
    con = duckdb.connect()
    con.execute(EPISODES.view_sql(str(tmp_path / "*.parquet")))
    rows = con.execute('SELECT partition, length, idle_fraction, "return" FROM episodes').fetchall()
    assert rows == [("Pong/1", 5, None, None)]
