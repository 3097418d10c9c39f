"""User SQL stays inside the catalog: no file outside it can be read, listed or attached, the
settings cannot be undone, and runaway queries are bounded in rows, time and memory."""

import time

import pytest

from episode_warehouse.catalog.query import QueryLimits, run_query
from episode_warehouse.errors import CatalogQueryError
from tests.helpers import build_atari


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox") / "wh"
    build_atari(root, "Pong/3", 3, capacity=300, episodes=20, lengths=(20, 60))
    secret = root.parent / "secret.csv"
    secret.write_text("password\nhunter2\n")
    return root / "catalog", secret


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT content FROM read_text('/etc/passwd')",
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_parquet('{ted}/episodes.parquet')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_blob('{secret}')",
    ],
)
def test_files_outside_the_catalog_are_refused(catalog, sql):
    folder, secret = catalog
    query = sql.format(secret=secret, ted=folder.parent / "ted" / "atari" / "Pong" / "3")
    with pytest.raises(CatalogQueryError) as err:
        run_query(folder, query)
    assert "queries may read only the catalog" in str(err.value)
    path = query.split("'")[1]
    assert path in str(err.value)  # the refused path is named
    assert "hunter2" not in str(err.value)


def test_the_catalog_itself_is_readable_and_settings_are_locked(catalog):
    folder, _ = catalog
    _, rows = run_query(folder, "SELECT count(*), sum(length) FROM episodes")
    assert rows[0][0] > 0
    for sql in ("SET enable_external_access = true", "ATTACH '/tmp/x.duckdb'"):
        with pytest.raises(CatalogQueryError):
            run_query(folder, sql)


def test_rows_time_and_memory_are_bounded(catalog):
    folder, _ = catalog
    cols, rows = run_query(folder, "SELECT * FROM range(100000000)", limits=QueryLimits(max_rows=3))
    assert rows == [(0,), (1,), (2,)]
    started = time.monotonic()
    with pytest.raises(CatalogQueryError, match="ran longer than 1 s and was stopped"):
        run_query(
            folder,
            "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range * b.range % 7 = 3",
            limits=QueryLimits(timeout_s=1),
        )
    assert time.monotonic() - started < 10
    with pytest.raises(CatalogQueryError, match="limit 20MB"):
        run_query(
            folder,
            "SELECT list(range) FROM range(20000000)",
            limits=QueryLimits(memory_limit="20MB"),
        )
