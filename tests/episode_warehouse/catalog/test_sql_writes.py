"""User SQL cannot write (#42): every write statement DuckDB has is refused by the statement
check, wrapped in EXPLAIN or not; and the sandbox child, handed those statements directly (the
check bypassed), cannot change a byte of the catalog: the kernel refuses its writes."""

from __future__ import annotations

import hashlib

import pytest

from episode_warehouse.catalog.landlock import abi_version
from episode_warehouse.catalog.query import QueryLimits, _request_parts, check_read_only, run_query
from episode_warehouse.catalog.sandbox import parse_size, run_in_child
from episode_warehouse.errors import CatalogQueryError
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import build_atari

pytestmark = pytest.mark.integration  # queries run in a child process (the SQL sandbox)

# every kind of statement DuckDB has that writes or changes state ({rows}: a published row file)
WRITES = [
    "COPY (SELECT 1 AS episode) TO '{rows}' (FORMAT parquet)",
    "COPY episodes TO '{rows}' (FORMAT parquet)",
    "COPY (SELECT * FROM episodes) TO '{catalog}/forged.csv'",
    "EXPORT DATABASE '{catalog}/exported'",
    "ATTACH '{catalog}/planted.duckdb' AS planted",
    "CREATE TABLE t AS SELECT 1",
    "CREATE VIEW episodes2 AS SELECT 1",
    "CREATE MACRO m() AS 1",
    "CREATE FUNCTION f() AS 1",
    "INSERT INTO episodes VALUES (1)",
    "UPDATE episodes SET length = 0",
    "DELETE FROM episodes",
    "DROP VIEW episodes",
    "ALTER VIEW episodes RENAME TO e",
    "SET enable_external_access = true",
    "RESET memory_limit",
    "PRAGMA memory_limit='100GB'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CALL pragma_version()",
    "VACUUM",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "PREPARE p AS SELECT 1",
    "DETACH memory",
    "SET VARIABLE x = 1",
    "MERGE INTO episodes USING (SELECT 1 AS episode) s ON false "
    "WHEN NOT MATCHED THEN INSERT VALUES (1)",
]
WRAPS = [
    "{}",
    "EXPLAIN {}",
    "EXPLAIN ANALYZE {}",
    "explain analyse {}",
    "EXPLAIN (FORMAT JSON) {}",
    "/* hidden */ EXPLAIN -- comment\n ANALYZE /* more */ {}",
    "SELECT 1; EXPLAIN ANALYZE {}",
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("writes") / "wh"
    build_atari(root, "Pong/3", 3, capacity=300, episodes=20, lengths=(20, 60))
    return LocalRoot(root)


def _snapshot(folder):
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _fill(sql, root):
    catalog = root.folder / "catalog"
    rows = next((catalog / "rows").rglob("episodes.parquet"))
    return sql.format(rows=rows, catalog=catalog)


@pytest.mark.parametrize("wrap", WRAPS)
def test_the_statement_check_refuses_every_write_wrapped_or_not(catalog, wrap):
    for sql in WRITES:
        # refused as a write, or (what EXPLAIN cannot wrap) as DuckDB's parser error
        with pytest.raises(CatalogQueryError, match="refused|Parser Error"):
            check_read_only(wrap.format(_fill(sql, catalog)))
    with pytest.raises(CatalogQueryError, match="COPY statements are refused"):
        check_read_only(wrap.format(_fill(WRITES[0], catalog)))


def test_explain_of_a_select_still_runs(catalog):
    _, rows = run_query(catalog, "EXPLAIN SELECT count(*) FROM episodes")
    assert rows
    _, rows = run_query(catalog, "EXPLAIN ANALYZE SELECT count(*) FROM episodes")
    assert rows


@pytest.mark.skipif(abi_version() < 1, reason="this kernel has no Landlock")
def test_the_child_cannot_write_the_catalog_even_past_the_check(catalog):
    """The forged-returns attack of #42 and every other write, handed to the child directly."""
    folder = catalog.folder / "catalog"
    before = _snapshot(folder)
    _, true_rows = run_query(catalog, 'SELECT count(*), sum("return") FROM episodes')
    views, allowed_dir = _request_parts(catalog)
    kinds = {}
    for template in WRITES:
        for wrap in ("{}", "EXPLAIN ANALYZE {}"):
            sql = wrap.format(_fill(template, catalog))
            answer = run_in_child(
                sql,
                [],
                views=views,
                allowed_dir=allowed_dir,
                files=catalog.duckdb_files(),
                memory_limit="1GB",
                memory_bytes=parse_size("1GB"),
                max_rows=10,
                timeout_s=60,
            )
            assert answer.writes_confined
            kinds[sql] = answer.error_kind
    assert _snapshot(folder) == before, "the catalog changed"
    copy = _fill(WRITES[0], catalog)
    assert kinds[copy] is not None and kinds[f"EXPLAIN ANALYZE {copy}"] is not None
    # and every later query still sees the true rows
    _, rows = run_query(catalog, 'SELECT count(*), sum("return") FROM episodes')
    assert rows == true_rows


def test_duckdb_hints_reach_the_user_whole(catalog):
    with pytest.raises(CatalogQueryError, match=r'Did you mean "episodes"'):
        run_query(catalog, "SELECT * FROM episode")


def test_no_hint_names_a_setting_the_sandbox_refuses(catalog):
    with pytest.raises(CatalogQueryError) as err:
        run_query(
            catalog,
            "SELECT list(range) FROM range(30000000)",
            limits=QueryLimits(memory_limit="20MB"),
        )
    text = str(err.value)
    assert "SET " not in text and "PRAGMA" not in text, text
    assert "EPISODE_WAREHOUSE_SQL_MEMORY" in text
