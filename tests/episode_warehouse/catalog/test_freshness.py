"""Curation columns are never silently stale (#69 item 4): before, ``near_duplicate_of`` was NULL
everywhere until ``warehouse curate`` ran (which reads as "kept"), and after a ``warehouse
drop`` or a rebuild it still named the dropped episode, so its surviving copy was filtered out
too; a score of a rebuilt episode still read as its own. Derived rows are keyed to the
``content_hash`` of the episode they were computed from; NULL means checked; a query that names
a column not current for some partitions warns, naming them."""

from __future__ import annotations

import logging

import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.curation.scores import BUILT_IN
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.stages.curation import publish_duplicates, publish_episode_scores
from tests.helpers import build_openx, dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # the catalog's sandboxed queries, the CLI

KEPT = "SELECT partition, episode, near_duplicate_of FROM episodes ORDER BY partition, episode"


def _spec(name: str) -> DatasetSpec:
    return DatasetSpec(name, cameras=("image",), image_size=16)


def _status(layout, caplog) -> tuple[dict, str]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="episode_warehouse.catalog.query"):
        _, rows = run_query(layout.root, KEPT)
    return {(p, e): of for p, e, of in rows}, caplog.text


def test_duplicates_are_never_read_stale(tmp_path, caplog):
    root = tmp_path / "wh"
    layout = WarehouseLayout.local(root)
    build_openx(root, _spec("alpha"), [[5, 6]], seed=1)
    build_openx(root, _spec("beta"), [[5, 6]], seed=1)  # the same episodes again

    status, warned = _status(layout, caplog)  # never checked: not NULL, and said so
    assert set(status.values()) == {"unchecked"}
    assert "openx:alpha, openx:beta" in warned and "warehouse curate" in warned

    publish_duplicates(layout)
    status, warned = _status(layout, caplog)
    assert status == {("alpha", 0): None, ("alpha", 1): None,
                      ("beta", 0): "openx/alpha#0", ("beta", 1): "openx/alpha#1"}  # fmt: skip
    assert warned == ""

    with dagster_home_of(root):  # the kept copies go: beta's are no longer known dropped
        assert main(["drop", "openx", "alpha", "--root", str(root)]) == 0
    status, warned = _status(layout, caplog)
    assert status == {("beta", 0): "unchecked", ("beta", 1): "unchecked"}
    assert "openx:beta" in warned and "alpha" not in warned
    publish_duplicates(layout)
    assert _status(layout, caplog)[0] == {("beta", 0): None, ("beta", 1): None}

    build_openx(root, _spec("beta"), [[5, 7]], seed=2)  # rebuilt: other episodes
    status, warned = _status(layout, caplog)
    assert set(status.values()) == {"unchecked"} and "openx:beta" in warned


def test_a_score_of_a_rebuilt_episode_is_not_read_as_its_own(tmp_path, caplog):
    root = tmp_path / "wh"
    layout = WarehouseLayout.local(root)
    quality = BUILT_IN[0]
    build_openx(root, _spec("gamma"), [[8, 9]], seed=1)
    publish_episode_scores(layout, quality, "openx", "gamma")
    _, rows = run_query(layout.root, "SELECT score_quality FROM episodes ORDER BY episode")
    assert all(r[0] is not None for r in rows)
    build_openx(root, _spec("gamma"), [[8, 9]], seed=2)  # rebuilt; the score not yet
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="episode_warehouse.catalog.query"):
        _, rows = run_query(layout.root, "SELECT score_quality FROM episodes WHERE "
                                         "score_quality IS NULL ORDER BY episode")  # fmt: skip
    assert len(rows) == 2
    assert "score_quality" in caplog.text and "openx:gamma" in caplog.text
    publish_episode_scores(layout, quality, "openx", "gamma")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="episode_warehouse.catalog.query"):
        _, rows = run_query(layout.root, "SELECT score_quality FROM episodes")
    assert all(r[0] is not None for r in rows) and caplog.text == ""
