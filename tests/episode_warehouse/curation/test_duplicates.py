"""Duplicates (#60, #69 items 3 and 11): planted copies, re-encoded copies and late-started copies
of reaching episodes are dropped for their originals, within a dataset and across datasets (a
shard re-published as another dataset); look-alikes that are not copies are kept (the same
trajectory replayed in another scene, the same recording with another instruction); a chain
whose ends share no step keeps its ends; identical pixels are found whatever their encoding (an
Atari partition exported to LeRobot and imported back); and a catalog of thousands of identical
episodes is searched in linear work."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.curation.duplicates import EpisodeSignatures, find_duplicates
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.decode import decode_shards
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.stages.curation import publish_duplicates
from tests.helpers import _publish
from warehouse_fixtures.curation_robot import KINDS, write_reaching

DISTINCT, PLANTED, LOOKALIKES, CHAINS = 240, 30, 10, 4


def _build(tmp_path):
    src = tmp_path / "src"
    pairs = write_reaching(src, "reach", DISTINCT, planted=PLANTED, per_shard=100, seed=3,
                           lookalikes=LOOKALIKES, chains=CHAINS)  # fmt: skip
    copy = src / "reach_copy"  # the first shard published again as a dataset of its own
    copy.mkdir()
    shutil.copy(src / "reach" / "reach_00000.tar", copy / "reach_copy_00000.tar")
    layout = WarehouseLayout.local(tmp_path / "wh")
    for name in ("reach", "reach_copy"):
        shards = list_shards(str(src), name).shards
        _publish(layout, "openx", name, lambda dec, s=shards: decode_shards(s, dec), 0)
    return layout, pairs


@pytest.mark.integration  # the catalog's query runs in a sandboxed child
def test_copies_are_dropped_for_their_originals_and_look_alikes_are_kept(tmp_path):
    layout, pairs = _build(tmp_path)
    built = publish_duplicates(layout)
    total = DISTINCT + PLANTED + LOOKALIKES + CHAINS * 5 + 100
    assert built.rebuilt and built.meta.episodes == total
    _, rows = run_query(
        layout.root,
        "SELECT partition, episode, near_duplicate_of FROM episodes ORDER BY partition, episode",
    )
    near = {(p, e): of for p, e, of in rows}
    want = {(p, e): None for p, e in near}  # kept unless planted as a copy
    for kind in KINDS:
        for original, duplicate in pairs[kind]:
            want["reach", duplicate] = f"openx/reach#{original}"
    for e in range(100):  # the re-published shard: every episode, across datasets
        want["reach_copy", e] = f"openx/reach#{e}"
    chained = {("reach", link) for chain in pairs["chain"] for link in chain}
    got_plain = {k: v for k, v in near.items() if k not in chained}
    assert got_plain == {k: v for k, v in want.items() if k not in chained}
    for kind in ("other_scene", "other_instruction"):  # never dropped, nor their originals
        assert all(near["reach", a] is None and near["reach", b] is None for a, b in pairs[kind])
    for chain in pairs["chain"]:  # a link is dropped only for a kept neighbour
        assert near["reach", chain[0]] is None
        for k, link in enumerate(chain):
            of = near["reach", link]
            if of is not None:
                kept = int(of.rsplit("#", 1)[1])
                assert kept in chain[max(k - 1, 0) : k] and near["reach", kept] is None, chain
        assert sum(near["reach", link] is not None for link in chain) >= 1
    assert not publish_duplicates(layout).rebuilt  # the same rows: not found again


def _signatures(**columns) -> EpisodeSignatures:
    n = len(columns["names"])
    return EpisodeSignatures(
        names=columns["names"],
        content_hash=columns.get("content_hash", [f"h{i}" for i in range(n)]),
        step_minhash=columns["step_minhash"],
        sample_steps=columns.get("sample_steps"),
        sample_thumbs=columns.get("sample_thumbs"),
        text_hash=columns.get("text_hash"),
    )


def _near(table) -> dict[str, str | None]:
    return dict(zip(table.column("episode_name").to_pylist(),
                    table.column("near_duplicate_of").to_pylist(), strict=True))  # fmt: skip


def test_an_episode_is_dropped_only_for_one_it_resembles():
    """a ~ b (44 of 64 values shared) and b ~ c (34), but c shares 14 with a: b is dropped for
    a, c is kept (the old rule closed the group and dropped c for a); d equals a byte for byte."""
    rng = np.random.default_rng(0)
    a = rng.integers(-(2**62), 2**62, 64)
    b = a.copy()
    b[:20] = rng.integers(-(2**62), 2**62, 20)
    c = b.copy()
    c[34:] = rng.integers(-(2**62), 2**62, 30)
    got = _near(find_duplicates(_signatures(
        names=["a", "b", "c", "d"],
        content_hash=["h1", "h2", "h3", "h1"],
        step_minhash=[a.tolist(), b.tolist(), c.tolist(), a.tolist()],
    )))  # fmt: skip
    assert np.mean(a == b) >= 0.5 and np.mean(b == c) >= 0.5 and np.mean(a == c) < 0.5
    assert got == {"a": None, "b": "a", "c": None, "d": "a"}


def test_steps_alike_but_observations_not_are_kept():
    """The same steps with other frames (another scene), another instruction, or no frame
    seen at a shared step: each kept; a re-encoded copy (thumbnails a level apart) dropped."""
    steps = list(range(100, 108))
    thumbs = np.random.default_rng(2).integers(0, 256, (8, 64), dtype=np.uint8)
    close = np.clip(thumbs.astype(np.int16) + 1, 0, 255).astype(np.uint8)
    far = (thumbs.astype(np.int16) + 90).clip(0, 255).astype(np.uint8)
    same = [7] * 64
    got = _near(find_duplicates(_signatures(
        names=["a", "reencoded", "scene", "instruction", "unseen"],
        step_minhash=[same] * 5,
        sample_steps=[steps, steps, steps, steps, list(range(200, 208))],
        sample_thumbs=[thumbs.tobytes(), close.tobytes(), far.tobytes(), thumbs.tobytes(),
                       thumbs.tobytes()],
        text_hash=["t1", "t1", "t1", "t2", "t1"],
    )))  # fmt: skip
    assert got == {"a": None, "reencoded": "a", "scene": None, "instruction": None,
                   "unseen": None}  # fmt: skip


def test_thousands_of_identical_episodes_are_linear_work():
    """5,000 identical episodes and 2,000 distinct ones sharing one band: the old search listed
    every pair in a bucket (12.5M pairs a band, minutes and gigabytes); each is compared with at
    most BUCKET_CAP kept episodes here."""
    rng = np.random.default_rng(3)
    same = rng.integers(-(2**62), 2**62, 64).tolist()
    distinct = rng.integers(-(2**62), 2**62, (2000, 64))
    distinct[:, :2] = 5  # the first band equal in all of them
    table = find_duplicates(_signatures(
        names=[f"s{i}" for i in range(5000)] + [f"d{i}" for i in range(2000)],
        content_hash=[f"c{i}" for i in range(7000)],
        step_minhash=[same] * 5000 + distinct.tolist(),
    ))  # fmt: skip
    near = _near(table)
    assert near["s0"] is None and all(near[f"s{i}"] == "s0" for i in range(1, 5000))
    assert all(near[f"d{i}"] is None for i in range(2000))


@pytest.mark.integration  # lerobot's writer, the catalog's sandboxed query
def test_identical_pixels_are_found_whatever_their_encoding(tmp_path):
    """An Atari partition exported to LeRobot (PNG frames, grey as three channels, int64
    actions) and imported back as a LeRobot source: every episode is dropped for the Atari one
    it copies. The step fingerprints hashed the stored frame bytes (zstd against PNG) and the
    two shared no MinHash value."""
    from episode_warehouse.export import ExportRequest, export_lerobot
    from episode_warehouse.loading import select_episodes
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from tests.helpers import _LINEAGE, build_atari

    root = tmp_path / "wh"
    build_atari(root, "Pong/1", 1, episodes=4)
    sel = select_episodes("SELECT source, partition, episode, start, length FROM episodes "
                          "ORDER BY episode", root=root)  # fmt: skip
    export = tmp_path / "export" / "lab" / "pong"
    export_lerobot(ExportRequest("pong", str(root), [tuple(r) for r in sel.rows()]), export)
    layout = WarehouseLayout.local(root)
    dataset = open_lerobot_folder(export)
    _publish(layout, "lerobot", "lab/pong",
             lambda dec: decode_lerobot(dataset, dec, lineage=_LINEAGE), 0)  # fmt: skip
    publish_duplicates(layout)
    _, rows = run_query(layout.root, "SELECT source, episode, near_duplicate_of FROM episodes "
                                     "ORDER BY source, episode")  # fmt: skip
    assert rows == [*(("atari", e, None) for e in range(4)),
                    *(("lerobot", e, f"atari/Pong/1#{e}") for e in range(4))]  # fmt: skip
