"""``catalog.duckdb`` (the views other DuckDB clients open) is rebuilt aside under its writer
lock: a builder killed mid-build leaves a staging file, and the next build removes it."""

from __future__ import annotations

import duckdb

from episode_warehouse.catalog.store import DB_NAME, CatalogStore
from episode_warehouse.storage.local import LocalRoot


def test_a_killed_builders_staging_file_is_removed_by_the_next_build(tmp_path):
    store = CatalogStore(LocalRoot(tmp_path))
    path = store.ensure_database()
    assert path == tmp_path / "catalog" / DB_NAME
    left = [
        path.parent / f".staging-{DB_NAME}-0123456789ab",
        path.parent / f".staging-{DB_NAME}-0123456789ab.wal",
    ]
    for stale in left:
        stale.write_bytes(b"half a database")  # what a kill -9 during the build leaves
    assert store.ensure_database(rebuild=True) == path
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".staging-")] == []
    con = duckdb.connect(str(path), read_only=True)
    try:  # the rebuilt file answers
        assert con.execute("SELECT count(*) FROM episodes").fetchone() == (0,)
    finally:
        con.close()
