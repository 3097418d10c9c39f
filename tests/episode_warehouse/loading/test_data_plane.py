"""The trainer data plane against ground truth computed with numpy over the TEDs: step windows,
weighted draws, statistics, pinned selections, and streams resumed in new processes."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from episode_warehouse import open_ted
from episode_warehouse.catalog.statistics import publish_statistics
from episode_warehouse.errors import CatalogQueryError, ConfigError, StaleSelectionError
from episode_warehouse.incremental import published
from episode_warehouse.loading import (
    EpisodeStream,
    Selection,
    StepWindowDataset,
    no_collate,
    select_episodes,
    selection_stats,
)
from episode_warehouse.loading.schedule import Plan, epoch_items
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import build_atari, build_openx
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # catalog queries (the sandbox) and DataLoader workers

ALL = "SELECT source, partition, episode, start, length FROM episodes"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("plane") / "wh"
    build_atari(root, "Pong/1", 1, capacity=400, episodes=18, lengths=(20, 90))
    build_atari(root, "Pong/2", 2, capacity=400, episodes=14, lengths=(20, 90))
    build_openx(root, DatasetSpec("cmu_stretch", image_size=16), [[12, 30, 7], [25]], seed=3)
    return root


# --- step windows -------------------------------------------------------------------------


def _truth(td, start, length, t, key, offsets):
    """numpy: the values at t + d clamped to the episode, and which were clamped."""
    values = td.get(key)[start : start + length].numpy()
    pos = np.array([t + d for d in offsets])
    pad = (pos < 0) | (pos >= length)
    return values[np.clip(pos, 0, length - 1)], pad


def test_windows_equal_numpy_and_never_cross_an_episode(root):
    sel = select_episodes(
        ALL + " WHERE source = 'atari' ORDER BY partition DESC, episode", root=root
    )
    deltas = {"observation": [-3, -2, -1, 0], "action": list(range(16)), ("next", "reward"): [0, 1]}
    ds = StepWindowDataset(sel, deltas)
    assert len(ds) == int(sel.length.sum())
    rng = np.random.default_rng(0)
    picks = rng.choice(len(ds), size=300, replace=False)
    batch = ds.__getitems__(picks.tolist())
    ends = np.cumsum(sel.length)
    for b, i in enumerate(picks):
        row = int(np.searchsorted(ends, i, side="right"))
        t = int(i - (ends[row] - sel.length[row]))
        assert int(batch["selection_index"][b]) == row and int(batch["step"][b]) == t
        td = open_ted(sel.source[row], sel.partition[row], root)
        for key, offsets in deltas.items():
            want, pad = _truth(td, int(sel.start[row]), int(sel.length[row]), t, key, offsets)
            assert np.array_equal(batch[key][b].numpy(), want), key
            flag = key + "_is_pad" if isinstance(key, str) else (key[0], key[1] + "_is_pad")
            assert np.array_equal(batch[flag][b].numpy(), pad), key
    one = ds[int(picks[0])]
    assert one["observation"].shape == (4, 84, 84) and one["action_is_pad"].shape == (16,)
    loader = DataLoader(ds, batch_size=64, shuffle=True, collate_fn=no_collate)
    first = next(iter(loader))
    assert first.batch_size == torch.Size([64]) and first["observation"].shape == (64, 4, 84, 84)


def test_windows_of_nested_keys_put_the_flag_beside_the_leaf(root):
    sel = select_episodes(ALL + " WHERE source = 'openx' ORDER BY episode", root=root)
    ds = StepWindowDataset(sel, {("observation", "state"): [-2, 0, 2], "action": [0, 1]})
    item = ds.__getitems__([0, 11, 12])
    assert item["observation", "state"].shape == (3, 3, 4)
    assert item["observation", "state_is_pad"].tolist()[0] == [True, False, False]
    assert item["observation", "state_is_pad"].tolist()[1] == [False, False, True]  # last step
    with pytest.raises(ConfigError, match="has no key 'gripper'"):
        StepWindowDataset(sel, {"gripper": [0]})
    with pytest.raises(ConfigError, match="non-empty list of integers"):
        StepWindowDataset(sel, {"action": []})


# --- weights ---------------------------------------------------------------------------------

WEIGHTED = (
    "SELECT source, partition, episode, start, length, CASE WHEN episode % 3 = 0 THEN 3.0 "
    "ELSE 1.0 END AS weight FROM episodes WHERE source = 'atari' ORDER BY partition, episode"
)


def test_weighted_draws_follow_the_weights_and_shard_without_overlap(root):
    sel = select_episodes(WEIGHTED, root=root)
    p = sel.weight / sel.weight.sum()
    n = 20_000
    stream = EpisodeStream(sel, None, seed=4, weighted=True, num_samples=n)
    counts = Counter(int(i) for i in stream.episode_order())
    for i, pi in enumerate(p):  # every episode within 5 sigma of its binomial expectation
        assert abs(counts[i] - n * pi) <= 5 * np.sqrt(n * pi * (1 - pi)) + 1, i
    same = EpisodeStream(sel, None, seed=4, weighted=True, num_samples=n).episode_order()
    assert np.array_equal(same, stream.episode_order())
    stream.set_epoch(1)
    assert not np.array_equal(stream.episode_order()[:100], same[:100])
    n = 300  # the draws delivered through loaders: each one reads an episode
    same = EpisodeStream(sel, None, seed=4, weighted=True, num_samples=n).episode_order()
    shards = []
    for rank in range(2):
        s = EpisodeStream(sel, None, seed=4, rank=rank, world_size=2, weighted=True, num_samples=n)
        loader = DataLoader(s, batch_size=None, num_workers=2, collate_fn=no_collate)
        shards.append([int(item["selection_index"][0]) for item in loader])
    assert sum(len(s) for s in shards) == n  # every draw delivered once, on one shard
    assert Counter(shards[0]) + Counter(shards[1]) == Counter(same.tolist())


def test_a_weighted_replay_buffer_draws_episodes_by_weight(root):
    from episode_warehouse.loading import replay_buffer

    sel = select_episodes(WEIGHTED, root=root)
    fits = np.where(sel.length >= 16, sel.weight, 0.0)
    p = fits / fits.sum()
    rb = replay_buffer(sel, slice_len=16, batch_size=16 * 4000, seed=1)
    batch = rb.sample().reshape(4000, 16)
    row_of = {(part, episode): i for i, (_, part, episode, _, _) in enumerate(sel.rows())}
    tds = {part: open_ted("atari", part, root) for part in ("Pong/1", "Pong/2")}
    counts = Counter()
    for b in range(4000):
        episode = batch["episode"][b]
        assert (episode == episode[0]).all()  # one episode per slice
        # the partition it came from: the one whose episode holds these 16 steps
        hits = [part for part, td in tds.items() if _slice_matches(td, batch[b], int(episode[0]))]
        assert len(hits) == 1, b
        counts[row_of[(hits[0], int(episode[0]))]] += 1
    n = 4000
    for i, pi in enumerate(p):
        assert abs(counts[i] - n * pi) <= 5 * np.sqrt(n * pi * (1 - pi)) + 1, i


def _slice_matches(td, item, episode):
    """Whether ``item``'s 16 steps are consecutive steps of ``episode`` in ``td``."""
    steps = np.flatnonzero(td["episode"].numpy() == episode)
    reward = td["next", "reward"][steps].numpy().reshape(-1)
    action = td["action"][steps].numpy()
    want_a, want_r = item["action"].numpy(), item["next", "reward"].numpy().reshape(-1)
    return any(
        np.array_equal(action[t : t + 16], want_a) and np.array_equal(reward[t : t + 16], want_r)
        for t in range(len(steps) - 15)
    )


def test_weighted_slices_fit_their_episode(root):
    sel = select_episodes(WEIGHTED, root=root)
    items = epoch_items(
        Plan(tuple(sel.length), 16, False, 0, True, tuple(sel.weight), 500), epoch=0
    )
    assert len(items) == 500 and (items[:, 2] == 16).all()
    assert (items[:, 1] + 16 <= sel.length[items[:, 0]]).all()


@pytest.mark.parametrize(
    ("weight", "match"),
    [("-1.0", "weight -1.0"), ("'nan'::DOUBLE", "weight nan"), ("0.0", "every weight is zero")],
)
def test_bad_weights_are_refused(root, weight, match):
    sql = f"SELECT source, partition, episode, start, length, {weight} AS weight FROM episodes"
    with pytest.raises(CatalogQueryError, match=match):
        select_episodes(sql, root=root)
    with pytest.raises(ConfigError, match="needs a weight column"):
        EpisodeStream(select_episodes(ALL, root=root), weighted=True)


# --- statistics ------------------------------------------------------------------------------


def _selected(sel, key):
    parts = []
    for i in range(len(sel)):
        td = open_ted(sel.source[i], sel.partition[i], sel.root)
        parts.append(td.get(key)[int(sel.start[i]) : int(sel.start[i] + sel.length[i])].numpy())
    return np.concatenate(parts)


def _check_against_numpy(stats, values, per_channel=False):
    x = values.astype(np.float64)
    x = x.reshape(len(x), 1, -1) if per_channel else x.reshape(len(x), -1, 1)
    flat = x.transpose(1, 0, 2).reshape(x.shape[1], -1)
    np.testing.assert_allclose(stats["mean"], flat.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(stats["std"], flat.std(axis=1), rtol=1e-5)
    assert np.array_equal(stats["min"], flat.min(axis=1))
    assert np.array_equal(stats["max"], flat.max(axis=1))
    span = flat.max(axis=1) - flat.min(axis=1)
    for name, q in (("q01", 0.01), ("q99", 0.99)):
        # the empirical distribution's quantile (its inverse CDF), within 2.5 bins of the range
        want = np.quantile(flat, q, axis=1, method="inverted_cdf")
        assert (np.abs(stats[name] - want) <= 0.01 * span + 1e-9).all(), name


def test_statistics_of_exactly_the_selected_steps(root):
    sel = select_episodes(
        ALL + " WHERE source = 'atari' AND episode % 2 = 1 ORDER BY partition, episode", root=root
    )
    keys = ["observation", "action", ("next", "reward")]
    full = selection_stats(sel, keys, use_catalog=False)
    _check_against_numpy(full["observation"], _selected(sel, "observation"), per_channel=True)
    _check_against_numpy(full["action"], _selected(sel, "action"))
    _check_against_numpy(full[("next", "reward")], _selected(sel, ("next", "reward")))
    assert full["action"]["count"] == int(sel.length.sum())
    openx = select_episodes(ALL + " WHERE source = 'openx'", root=root)
    state = selection_stats(openx, [("observation", "state")], use_catalog=False)
    _check_against_numpy(
        state[("observation", "state")], _selected(openx, ("observation", "state"))
    )


def test_statistics_from_the_catalog_equal_the_full_pass(root):
    layout = WarehouseLayout.local(root)
    for key in ("Pong/1", "Pong/2"):
        built = publish_statistics(layout, "atari", key, code_version="t")
        assert "observation" in built.meta.keys and "next/observation" not in built.meta.keys
    sel = select_episodes(ALL + " WHERE source = 'atari' AND length > 40", root=root)
    keys = ["observation", "action", ("next", "reward")]
    stored = selection_stats(sel, keys)
    full = selection_stats(sel, keys, use_catalog=False)
    for key in keys:
        for name in ("mean", "std", "min", "max", "q01", "q99"):
            np.testing.assert_allclose(stored[key][name], full[key][name], rtol=1e-9, err_msg=name)
    from episode_warehouse.catalog import run_query

    _, rows = run_query(
        layout.root,
        "SELECT count(DISTINCT episode), min(len(hist)) FROM statistics WHERE key = 'action'",
    )
    assert rows[0][0] >= 14 and rows[0][1] == 256


# --- pinned selections -------------------------------------------------------------------------


def test_a_pinned_selection_loads_equal_and_refuses_when_stale(root, tmp_path):
    sel = select_episodes(WEIGHTED + " LIMIT 9", root=root)
    path = sel.save(tmp_path / "pinned.json")
    manifest = json.loads(path.read_text())
    assert manifest["query"] == WEIGHTED + " LIMIT 9" and len(manifest["rows"]) == 9
    assert set(manifest["teds"]) == {"atari:Pong/1"}
    assert Selection.load(path) == sel
    # the partition's TED is rebuilt (a new version): the pin no longer holds
    ted = WarehouseLayout.local(root).ted_dir("atari", "Pong/1")
    record = published(LocalRoot(tmp_path), ted).to_json()
    (ted / "meta.json").write_text(json.dumps({**record, "version": "0" * 16}))
    try:
        with pytest.raises(StaleSelectionError, match="TED of atari:Pong/1 changed"):
            Selection.load(path)
        assert Selection.load(path, allow_stale=True) == sel
    finally:
        (ted / "meta.json").write_text(json.dumps(record))
    with pytest.raises(ConfigError, match="pins a selection of the warehouse at"):
        Selection.load(path, root=tmp_path / "other-root")


# --- resuming in new processes ------------------------------------------------------------------


def _spec(root, **spec):
    return {
        "root": str(root),
        "sql": ALL + " WHERE source = 'atari' ORDER BY partition, episode",
        "slice_len": 16,
        "seed": 9,
        "epoch": 2,
        "rank": 0,
        "world_size": 1,
        "workers": 0,
        "take": None,
        "state_in": None,
        **spec,
    }


def _here(tmp_path, name, root, **spec):
    """Reads in this process; the state goes through a pickle file, as a checkpoint's would."""
    from tests.episode_warehouse.loading.stream_child import read

    items, state = read(_spec(root, **spec))
    path = tmp_path / f"{name}.state"
    path.write_bytes(pickle.dumps(state))
    return [tuple(i) for i in items], str(path)


def _child(tmp_path, name, root, **spec):
    """Reads in a new Python process (nothing shared with this one but the files)."""
    spec = {
        **_spec(root, **spec),
        "state_out": str(tmp_path / f"{name}.state"),
        "items_out": str(tmp_path / f"{name}.json"),
    }
    (tmp_path / f"{name}.spec").write_text(json.dumps(spec))
    subprocess.run(
        [sys.executable, "-m", "tests.episode_warehouse.loading.stream_child",
         str(tmp_path / f"{name}.spec")],
        check=True,
    )  # fmt: skip
    items = json.loads((tmp_path / f"{name}.json").read_text())
    return [tuple(i) for i in items], spec["state_out"]


def _epoch(root):
    sel = select_episodes(ALL + " WHERE source = 'atari' ORDER BY partition, episode", root=root)
    items = epoch_items(Plan(tuple(sel.length), 16, False, 9, True), epoch=2)
    return [tuple(int(v) for v in row) for row in items], sel


@pytest.mark.parametrize("world_size", [1, 2])
def test_an_interrupted_stream_resumes_exactly(root, tmp_path, world_size):
    everything, _ = _epoch(root)
    seen = []
    for rank in range(world_size):
        whole, _ = _here(tmp_path, f"whole{rank}", root, rank=rank, world_size=world_size)
        for k in (1, 7, len(whole) - 1):
            first, state = _here(tmp_path, f"a{rank}-{k}", root, rank=rank,
                                 world_size=world_size, take=k)  # fmt: skip
            rest, _ = _here(tmp_path, f"b{rank}-{k}", root, rank=rank, world_size=world_size,
                            state_in=state)  # fmt: skip
            assert first + rest == whole, (rank, k)  # the remaining items, in the same order
        seen += whole
    assert sorted(seen) == sorted(everything)


@pytest.mark.parametrize(
    "world_size", [pytest.param(1, marks=pytest.mark.slow), 2]
)  # 2 ranks covers 1 in the default set: each new process costs ~14 s of imports
def test_a_stream_stopped_in_one_process_resumes_in_another(root, tmp_path, world_size):
    rank = world_size - 1
    whole, _ = _here(tmp_path, "whole", root, rank=rank, world_size=world_size)
    first, state = _child(tmp_path, "first", root, rank=rank, world_size=world_size, take=7)
    rest, _ = _child(tmp_path, "rest", root, rank=rank, world_size=world_size, state_in=state)
    assert first + rest == whole


def test_resuming_with_another_world_size_redistributes_the_unread(root, tmp_path):
    everything, _ = _epoch(root)
    done, states = [], []
    for rank, take in ((0, 5), (1, 9)):
        items, state = _here(tmp_path, f"old{rank}", root, rank=rank, world_size=2, take=take)
        done += items
        states.append(pickle.loads(Path(state).read_bytes()))
    merged = tmp_path / "merged.state"
    merged.write_bytes(pickle.dumps(EpisodeStream.merge_states(states)))
    for rank in range(3):
        items, _ = _here(tmp_path, f"new{rank}", root, rank=rank, world_size=3,
                         state_in=str(merged))  # fmt: skip
        done += items
    assert Counter(done) == Counter(everything)  # nothing repeated, nothing lost


def test_stateful_dataloader_workers_resume(root, tmp_path):
    whole, _ = _here(tmp_path, "w-whole", root, workers=2)
    first, state = _here(tmp_path, "w-a", root, workers=2, take=6)
    rest, _ = _here(tmp_path, "w-b", root, workers=2, state_in=state)
    assert Counter(first + rest) == Counter(whole)
    assert first + rest == whole  # the loader interleaves its workers the same way


def test_a_batch_of_two_schemas_is_refused_by_name(root):
    """Atari frames and an OpenX camera cannot be stacked: a clear error, not tensordict's."""
    from episode_warehouse.loading import EpisodeSliceDataset, replay_buffer, ted_collate

    with pytest.raises(ConfigError, match=r"atari:Pong/1 and openx:cmu_stretch have different"):
        replay_buffer([("atari", "Pong/1"), ("openx", "cmu_stretch")], slice_len=4, root=root)
    sel = select_episodes(ALL + " ORDER BY source, partition, episode", root=root)
    with pytest.raises(ConfigError, match=r"replay_buffer: .* different TED schemas"):
        replay_buffer(sel, slice_len=4, batch_size=16)
    ds = EpisodeSliceDataset(sel, slice_len=4)
    openx = list(sel.source).index("openx")
    first_openx = next(k for k in range(len(ds)) if ds[k]["selection_index"][0] >= openx)
    items = [ds[0], ds[first_openx]]
    with pytest.raises(ConfigError, match=r"ted_collate: item 0 .* and item 1 .*only in the "):
        ted_collate(items)
    with pytest.raises(ConfigError, match=r"Fix: select partitions of one source"):
        ted_collate(items)
