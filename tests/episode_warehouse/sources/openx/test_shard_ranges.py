"""A dataset built as shard ranges (``droid@00000-00002`` ...): each range mirrors and decodes
only its shards, a changed shard rebuilds only its range, and the ranges read as the dataset
built whole: ``open_ted`` of the dataset's name, the catalog's ``dataset``, a mixture's pooled
statistics."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import NotMaterializedError, PartitionKeyError
from episode_warehouse.partition_keys import ShardRange, key_form, parse_range
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.shard_ranges import parse_range_setting, plan_ranges
from episode_warehouse.ted.chunks import ConcatTensor
from tests.helpers import build_openx_stages
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.droid import FEATURES, droid_episode, write_droid

pytestmark = pytest.mark.integration
RANGES = ("droid@00000-00002", "droid@00003-00003", "droid@00004-00006")


def _build(layout, key, *, through="catalog"):
    """Every stage of one partition; the Built of the raw, decoded and TED stages."""
    src = layout.folder.parent / "src"
    return build_openx_stages(layout, src, key, standardized=through == "standardized")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """DROID built as three ranges (7 shards, one episode each), and built whole in a root of
    its own (a root holds a dataset whole or as ranges, never both)."""
    tmp = tmp_path_factory.mktemp("ranges")
    _, by_shard = write_droid(tmp / "src", shards=7, per_shard=1)
    layout = WarehouseLayout.local(tmp / "wh")
    for key in RANGES:
        _build(layout, key, through="standardized")
    whole = WarehouseLayout.local(tmp / "whole")
    _build(whole, "droid", through="standardized")
    return layout, [e for shard in by_shard for e in shard], whole


def test_a_range_mirrors_and_decodes_only_its_shards(built, tmp_path):
    layout, _, _ = built
    shards = sorted(os.listdir(layout.raw_dir("openx", RANGES[2]) / "rlds"))
    assert shards == [f"droid-train.tfrecord-{i:05d}-of-00007" for i in (4, 5, 6)]
    _, rows = run_query(layout.root, "SELECT partition, dataset, source_files FROM episodes "
                        "WHERE partition LIKE 'droid@%' ORDER BY partition, episode")  # fmt: skip
    assert [r[1] for r in rows] == ["droid"] * 7
    assert [r[2][0][-14:-9] for r in rows] == [f"{i:05d}" for i in range(7)]
    fresh = WarehouseLayout.local(tmp_path / "fresh")
    with pytest.raises(PartitionKeyError, match="has 7 shards .* ends at 7"):
        mirror_openx(str(layout.folder.parent / "src"), "droid@00005-00007",
                     fresh.raw_dir("openx", "droid@00005-00007"), root=fresh.root,
                     code_version="t")  # fmt: skip


@pytest.mark.parametrize(
    "key",
    [
        "droid@0-3", "droid@00003-00001", "droid@", "Droid@00000-00001",
        "droid@\u0660\u0660\u0660\u0660\u0660-\u0660\u0660\u0660\u0660\u0661",  # Arabic-Indic
        "droid@\uff10\uff10\uff10\uff10\uff10-\uff10\uff10\uff10\uff10\uff11",  # fullwidth
        "droid@00000-00001\n",  # `$` matches before a final newline; the key is matched whole
    ],
)  # fmt: skip
def test_malformed_range_keys_are_refused_by_name(key):
    with pytest.raises(PartitionKeyError, match="DATASET@FIRST-LAST|dataset id"):
        registry.check_partition("openx", key)
    with pytest.raises(PartitionKeyError, match="DATASET@FIRST-LAST"):
        key_form(key)


def test_the_key_form_is_told_from_the_key_alone():
    assert key_form("droid@00000-00031") == "range"
    assert key_form("droid") == key_form("Pong/5") == "name"


def test_ranges_are_planned_and_configured():
    assert [r.key for r in plan_ranges("droid", 5, 2)] == [
        "droid@00000-00001", "droid@00002-00003", "droid@00004-00004"
    ]  # fmt: skip
    assert parse_range("droid@00032-00063") == ShardRange("droid", 32, 63)
    assert parse_range_setting("droid=32, fractal20220817_data=64") == {
        "droid": 32, "fractal20220817_data": 64
    }  # fmt: skip
    assert registry.dataset_name("openx", "droid@00032-00063") == "droid"


def test_the_ranges_open_as_the_dataset_built_whole(built):
    layout, _, whole_root = built
    whole = open_ted("openx", "droid", whole_root.folder)
    assert not isinstance(whole["action"], ConcatTensor)
    chunked = open_ted("openx", "droid", layout.folder)
    rows = whole.batch_size[0]
    assert chunked.batch_size[0] == rows
    rng = np.random.default_rng(0)
    indices = [
        torch.from_numpy(rng.permutation(rows)[:40]),  # across ranges, shuffled
        slice(10, 30),  # inside the first range: a view
        slice(None, None, 7),
        torch.from_numpy(rng.random(rows) < 0.3),  # a mask
        -1,
        5,
    ]
    for key in whole.keys(True, True):
        for index in indices:
            want, got = whole.get(key)[index], chunked.get(key)[index]
            assert torch.equal(want, got), (key, index)
    assert torch.equal(chunked["episode"][:].unique(), torch.arange(7, dtype=torch.int32))
    picks = torch.from_numpy(rng.permutation(rows)[:9])
    for index in ((picks, 2), (slice(3, 90), slice(1, 4)), (Ellipsis, 0)):  # rows, then columns
        assert torch.equal(whole["action"][index], chunked["action"][index]), index


def test_a_gap_between_ranges_is_named(built, tmp_path):
    layout, _, _ = built
    import shutil

    gap = tmp_path / "gap"
    shutil.copytree(layout.folder / "ted", gap / "ted", symlinks=True)
    shutil.rmtree(gap / "ted" / "openx" / RANGES[1])
    with pytest.raises(NotMaterializedError, match="shards 3 to 3 of droid are in no published"):
        open_ted("openx", "droid", gap)


def test_a_changed_shard_rebuilds_only_its_range(built, tmp_path):
    layout, _, _ = built
    import shutil

    shutil.copytree(layout.folder.parent / "src", tmp_path / "src")
    here = WarehouseLayout.local(tmp_path / "wh")
    before = {key: _build(here, key) for key in RANGES}
    shard = tmp_path / "src" / "droid" / "1.0.1" / "droid-train.tfrecord-00003-of-00007"
    shard.write_bytes(
        b"".join([w.frame_record(w.serialize_episode(FEATURES, droid_episode(99).record))])
    )
    after = {key: _build(here, key) for key in RANGES}
    rebuilt = {key: [b.rebuilt for b in built_] for key, built_ in after.items()}
    assert rebuilt == {RANGES[0]: [False] * 3, RANGES[1]: [True] * 3, RANGES[2]: [False] * 3}
    for key in (RANGES[0], RANGES[2]):
        assert after[key][2].version == before[key][2].version


def test_a_mixture_pools_the_ranges_into_the_dataset(built):
    from episode_warehouse.standardized import mixture_weights
    from episode_warehouse.standardized.mixtures import range_share, resolve
    from episode_warehouse.standardized.reader import dataset_statistics

    layout, _, whole = built
    entries = resolve([("droid", 1.0), ("cmu_stretch", 1.0)], layout.folder)
    weights = mixture_weights([("droid", 1.0)], layout.folder)
    truth = dataset_statistics("openx", "droid", whole.folder)  # built whole, exactly
    assert [e[1] for e in entries] == list(RANGES)
    assert weights == {"droid": 1.0}
    pooled = entries[0][3]
    assert pooled["num_transitions"] == truth["num_transitions"]
    assert pooled["num_trajectories"] == truth["num_trajectories"]
    for key in ("action", "proprio"):
        for stat in ("mean", "std", "min", "max", "q01", "q99", "p01", "p99"):
            np.testing.assert_allclose(pooled[key][stat], truth[key][stat], rtol=1e-9, atol=1e-9)
        assert pooled[key]["mask"] == truth[key]["mask"]
    shares = [range_share(e[3]) for e in entries]
    assert sum(shares) == pytest.approx(1.0)


def test_a_range_of_a_dataset_the_tfds_authors_wrote(shared_samples, tmp_path):
    """TFDS's own bridge test folder (dataset_info.json and features.json as TFDS wrote them,
    one train shard) built as the range bridge@00000-00000: the same TED as built whole."""
    src = shared_samples / "rlds"
    whole_root = WarehouseLayout.local(tmp_path / "whole")
    build_openx_stages(whole_root, src, "bridge")
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx_stages(layout, src, "bridge@00000-00000")
    whole = open_ted("openx", "bridge", whole_root.folder)
    part = open_ted("openx", "bridge@00000-00000", layout.folder)
    assert whole.batch_size == part.batch_size and whole.batch_size[0] > 0
    for key in whole.keys(True, True):
        assert torch.equal(whole.get(key)[:], part.get(key)[:]), key
    _, rows = run_query(layout.root, "SELECT DISTINCT partition, dataset FROM episodes")
    assert sorted(rows) == [("bridge@00000-00000", "bridge")]
