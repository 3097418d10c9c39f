"""User SQL stays inside the catalog: no file outside it can be read, listed or attached, the
settings cannot be undone, and runaway queries are bounded in rows, time and memory."""

import time

import pytest

from episode_warehouse.catalog.query import QueryLimits, run_query
from episode_warehouse.errors import CatalogQueryError
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import build_atari

pytestmark = pytest.mark.integration  # every query runs in a child process (the SQL sandbox)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox") / "wh"
    build_atari(root, "Pong/3", 3, capacity=300, episodes=20, lengths=(20, 60))
    secret = root.parent / "secret.csv"
    secret.write_text("password\nhunter2\n")
    return LocalRoot(root), secret


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
    root, secret = catalog
    query = sql.format(secret=secret, ted=root.folder / "ted" / "atari" / "Pong" / "3")
    with pytest.raises(CatalogQueryError) as err:
        run_query(root, query)
    assert "queries may read only the catalog" in str(err.value)
    path = query.split("'")[1]
    assert path in str(err.value)  # the refused path is named
    assert "hunter2" not in str(err.value)


def test_the_catalog_itself_is_readable_and_settings_are_locked(catalog):
    root, _ = catalog
    _, rows = run_query(root, "SELECT count(*), sum(length) FROM episodes")
    assert rows[0][0] > 0
    for sql in ("SET enable_external_access = true", "ATTACH '/tmp/x.duckdb'"):
        with pytest.raises(CatalogQueryError):
            run_query(root, sql)


def test_rows_time_and_memory_are_bounded(catalog):
    root, _ = catalog
    cols, rows = run_query(root, "SELECT * FROM range(100000000)", limits=QueryLimits(max_rows=3))
    assert rows == [(0,), (1,), (2,)]
    started = time.monotonic()
    with pytest.raises(CatalogQueryError, match="ran longer than 1 s and was stopped"):
        run_query(
            root,
            "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range * b.range % 7 = 3",
            limits=QueryLimits(timeout_s=1),
        )
    assert time.monotonic() - started < 10
    with pytest.raises(CatalogQueryError, match="limit 20MB"):
        run_query(
            root,
            "SELECT list(range) FROM range(20000000)",
            limits=QueryLimits(memory_limit="20MB"),
        )


def test_the_working_directorys_temp_folder_is_not_readable(catalog, tmp_path, monkeypatch):
    """DuckDB's default temp directory is ``<cwd>/.tmp`` and is readable through the sandbox
    unless the query has a private one."""
    root, _ = catalog
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret.txt").write_text("hunter2\n")
    monkeypatch.chdir(tmp_path)
    for path in (".tmp/secret.txt", str(tmp_path / ".tmp" / "secret.txt")):
        with pytest.raises(CatalogQueryError, match="queries may read only the catalog") as err:
            run_query(root, f"SELECT content FROM read_text('{path}')")
        assert "hunter2" not in str(err.value)


def test_memory_outside_duckdbs_accounting_is_bounded(catalog):
    """A 3.2 GB list is built outside DuckDB's buffer accounting: only the process's hard
    bound stops it, and the error names the limit."""
    root, _ = catalog
    started = time.monotonic()
    with pytest.raises(CatalogQueryError, match=r"memory bound \(limit 500MB\)"):
        run_query(
            root,
            "SELECT len(range(400000000))",
            limits=QueryLimits(memory_limit="500MB"),
        )
    assert time.monotonic() - started < 60
    # the same limit leaves room for ordinary queries
    _, rows = run_query(
        root, "SELECT len(range(1000000))", limits=QueryLimits(memory_limit="500MB")
    )
    assert rows == [(1000000,)]


def test_a_query_that_ignores_interrupts_is_killed_at_the_timeout(catalog):
    """``repeat`` of 1.5 GB never checks DuckDB's interrupt; the child is killed instead."""
    root, _ = catalog
    started = time.monotonic()
    with pytest.raises(CatalogQueryError, match="ran longer than 2 s and was stopped"):
        run_query(
            root,
            "SELECT length(repeat('x', 1500000000)) + length(repeat('y', 1500000000))",
            limits=QueryLimits(timeout_s=2, memory_limit="8GB"),
        )
    assert time.monotonic() - started < 2 + 5


def test_a_size_that_is_not_one_is_refused_by_name(catalog):
    root, _ = catalog
    with pytest.raises(CatalogQueryError, match="'lots' is not a size"):
        run_query(root, "SELECT 1", limits=QueryLimits(memory_limit="lots"))


def test_every_duckdb_value_type_crosses_from_the_child_unchanged(catalog):
    """The child's answer is unpickled with an allow-list; DuckDB's own Python values (run in
    this process, the reference) come back equal."""
    import duckdb

    root, _ = catalog
    sql = (
        "SELECT TIMESTAMPTZ '2026-12-02 10:00:00+00', TIMESTAMP '2026-12-02 10:00:00', "
        "DATE '2026-12-02', TIME '10:11:12', INTERVAL 3 DAY, 1.25::DECIMAL(10, 2), "
        "'5b3c0bd2-7d04-4c39-9c3e-2b4b8f3f6f11'::UUID, '\\xAA'::BLOB, [1, 2], "
        "{'a': 1, 'b': 'x'}, MAP {'k': 2}, NULL, 2::HUGEINT, 'text', true, 1.5::DOUBLE"
    )
    _, rows = run_query(root, sql)
    assert rows == duckdb.connect().execute(sql).fetchall()


def test_an_answer_that_names_a_callable_is_refused():
    import os
    import pickle

    from episode_warehouse.catalog.sandbox import _loads

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    with pytest.raises(pickle.UnpicklingError, match="posix.system may not be sent"):
        _loads(pickle.dumps(Evil()))
