"""Duplicates (#60): planted copies, re-encoded copies and late-started copies of reaching
episodes are grouped with their originals, within a dataset and across datasets (a shard
re-published as another dataset); no two distinct episodes are; the episodes view keeps one of
each with ``near_duplicate_of IS NULL``."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.curation.duplicates import (
    EpisodeSignatures,
    candidate_pairs,
    find_duplicates,
)
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.decode import decode_shards
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.stages.curation import publish_duplicates
from tests.helpers import _publish
from warehouse_fixtures.curation_robot import write_reaching

DISTINCT, PLANTED = 240, 30


def _build(tmp_path):
    src = tmp_path / "src"
    pairs = write_reaching(src, "reach", DISTINCT, planted=PLANTED, per_shard=100, seed=3)
    copy = src / "reach_copy"  # the first shard published again as a dataset of its own
    copy.mkdir()
    shutil.copy(src / "reach" / "reach_00000.tar", copy / "reach_copy_00000.tar")
    layout = WarehouseLayout.local(tmp_path / "wh")
    for name in ("reach", "reach_copy"):
        shards = list_shards(str(src), name).shards
        _publish(layout, "openx", name, lambda dec, s=shards: decode_shards(s, dec), 0)
    return layout, pairs


@pytest.mark.integration  # the catalog's query runs in a sandboxed child
def test_planted_duplicates_are_grouped_and_distinct_episodes_are_not(tmp_path):
    layout, pairs = _build(tmp_path)
    built = publish_duplicates(layout)
    assert built.rebuilt and built.meta.episodes == DISTINCT + PLANTED + 100
    _, rows = run_query(
        layout.root,
        "SELECT partition, episode, near_duplicate_of, duplicate_group FROM episodes "
        "WHERE duplicate_group IS NOT NULL ORDER BY partition, episode",
    )
    group = {(p, e): g for p, e, _, g in rows}
    want: dict[tuple[str, int], str] = {}
    for kind_pairs in pairs.values():
        for original, duplicate in kind_pairs:
            want[("reach", original)] = want[("reach", duplicate)] = f"openx/reach#{original}"
    for e in range(100):  # the re-published shard: every episode, across datasets
        keep = want.get(("reach", e), f"openx/reach#{e}")
        want[("reach", e)] = want[("reach_copy", e)] = keep
    assert group == want  # every planted duplicate found (recall 1), nothing else (no FP)
    kept = {(p, e) for p, e, of, _ in rows if of is None}
    assert kept == {("reach", e) for e in range(100)} | {
        ("reach", o) for o, _ in (p for v in pairs.values() for p in v)
    }
    _, (count,) = run_query(
        layout.root, "SELECT count(*) FROM episodes WHERE near_duplicate_of IS NULL"
    )
    assert count == (DISTINCT,)
    assert not publish_duplicates(layout).rebuilt  # the same rows: not found again


def test_groups_keep_their_first_episode_and_close_transitively():
    """a ~ b by content, b ~ c by shared steps: one group kept as a; d alone is not listed."""
    rng = np.random.default_rng(0)
    base = rng.integers(-(2**62), 2**62, 64)
    near = base.copy()
    near[:20] = rng.integers(-(2**62), 2**62, 20)  # 44 of 64 shared: J ~ 0.69
    other = rng.integers(-(2**62), 2**62, 64)
    got = find_duplicates(
        EpisodeSignatures(
            names=["a", "b", "c", "d"],
            content_hash=["h1", "h1", "h2", "h3"],
            step_minhash=[other.tolist(), base.tolist(), near.tolist(), (other + 1).tolist()],
        )
    ).to_pylist()
    assert got == [
        {"episode_name": "a", "near_duplicate_of": None, "duplicate_group": "a"},
        {"episode_name": "b", "near_duplicate_of": "a", "duplicate_group": "a"},
        {"episode_name": "c", "near_duplicate_of": "a", "duplicate_group": "a"},
    ]


def test_a_pair_sharing_half_its_values_is_a_candidate_and_one_sharing_none_is_not():
    rng = np.random.default_rng(1)
    a = rng.integers(-(2**62), 2**62, 64)
    b = a.copy()
    b[1::2] += 1  # every band of two differs in one value: no shared band
    c = a.copy()
    c[32:] += 1  # the first 16 bands shared
    assert candidate_pairs(np.stack([a, b])) == set()
    assert candidate_pairs(np.stack([a, c])) == {(0, 1)}
