"""Loaders: TorchRL slices inside episodes, selections, exactly-once streaming, map-style."""

import pytest
import torch
from torch.utils.data import DataLoader

from episode_warehouse import open_ted
from episode_warehouse.errors import CatalogQueryError, NotMaterializedError
from episode_warehouse.loading import (
    EpisodeSliceDataset,
    EpisodeStream,
    Selection,
    no_collate,
    replay_buffer,
    select_episodes,
    ted_collate,
)

pytestmark = pytest.mark.integration  # DataLoader workers and catalog queries

ALL = "SELECT source, partition, episode, start, length FROM episodes ORDER BY partition, episode"


def _check_slices_inside_episodes(batch, slice_len):
    ep = batch["episode"].reshape(-1, slice_len)
    assert (ep == ep[:, :1]).all(), "a slice crosses an episode boundary"
    init = batch["is_init"].reshape(-1, slice_len)
    assert not init[:, 1:].any()
    done = batch["next", "done"].reshape(-1, slice_len)
    assert not done[:, :-1].any()


@pytest.mark.parametrize(
    "parts", [[("atari", "Pong/1")], [("atari", "Pong/1"), ("atari", "Pong/2")]]
)
def test_replay_buffer_slices_stay_inside_episodes(warehouse_root, parts):
    rb = replay_buffer(parts, slice_len=16, batch_size=32 * 16, root=warehouse_root)
    for _ in range(5):
        batch = rb.sample()
        assert batch.batch_size[0] == 32 * 16
        _check_slices_inside_episodes(batch, 16)
        obs, nxt = batch["observation"].reshape(32, 16, 84, 84), batch["next", "observation"]
        nxt = nxt.reshape(32, 16, 84, 84)
        assert torch.equal(obs[:, 1:], nxt[:, :-1])  # next of t is the observation of t+1


def test_selection_feeds_values_equal_to_open_ted(warehouse_root):
    sel = select_episodes(ALL + " LIMIT 7", root=warehouse_root)
    ds = EpisodeSliceDataset(sel, slice_len=8)
    td = open_ted("atari", "Pong/1", warehouse_root)
    for k in range(len(ds)):
        item = ds[k]
        i = int(item["selection_index"][0])
        start = int(item["episode"][0])
        row = sel.start[i]
        assert start == sel.episode[i]
        offset = k * 8 - sum(int(n) // 8 * 8 for n in sel.length[:i])
        ref = td[row + offset : row + offset + 8]
        assert torch.equal(item["observation"], ref["observation"])
        assert torch.equal(item["next", "observation"], ref["next", "observation"][:])
    batch = next(iter(DataLoader(ds, batch_size=4, collate_fn=ted_collate)))
    assert batch.batch_size == torch.Size([4, 8])


def _deliveries(sel, slice_len, world_size=2, workers=2, seed=5, epoch=0):
    seen = []
    for rank in range(world_size):
        stream = EpisodeStream(sel, slice_len, seed=seed, rank=rank, world_size=world_size)
        stream.set_epoch(epoch)
        loader = DataLoader(stream, batch_size=None, num_workers=workers, collate_fn=no_collate)
        for item in loader:
            seen.append(
                (
                    int(item["selection_index"][0]),
                    int(item.batch_size[0]),
                    int(item["observation"].sum()),
                )
            )
    return seen


def test_stream_delivers_every_episode_exactly_once_across_ranks_and_workers(warehouse_root):
    # 11 episodes: not a multiple of 2 ranks x 2 workers, so shards are uneven
    sel = select_episodes(ALL + " LIMIT 11", root=warehouse_root)
    assert len(sel) == 11
    whole = _deliveries(sel, None)
    assert sorted(i for i, _, _ in whole) == list(range(len(sel)))
    assert all(n == sel.length[i] for i, n, _ in whole)
    sliced = _deliveries(sel, 10)
    per_episode = {}
    for i, n, _ in sliced:
        per_episode[i] = per_episode.get(i, 0) + n
    assert per_episode == {i: int(n) for i, n in enumerate(sel.length)}


def test_stream_is_deterministic_per_seed_and_epoch(warehouse_root):
    sel = select_episodes(ALL, root=warehouse_root)
    a = [x[0] for x in _deliveries(sel, None, world_size=1, workers=0, seed=1)]
    b = [x[0] for x in _deliveries(sel, None, world_size=1, workers=0, seed=1)]
    c = [x[0] for x in _deliveries(sel, None, world_size=1, workers=0, seed=1, epoch=1)]
    assert a == b and a != c and sorted(a) == sorted(c)


def test_unknown_partitions_and_empty_selections_fail_clearly(warehouse_root):
    with pytest.raises(NotMaterializedError, match="atari:Pong/3, atari:Pong/4"):
        Selection.from_rows(
            [("atari", "Pong/3", 0, 0, 5), ("atari", "Pong/4", 0, 0, 5)], root=warehouse_root
        )
    with pytest.raises(CatalogQueryError, match="selects no episode"):
        select_episodes(ALL.replace("ORDER", "WHERE length < 0 ORDER"), root=warehouse_root)
    with pytest.raises(CatalogQueryError, match="needs"):
        select_episodes("SELECT partition FROM episodes", root=warehouse_root)
    with pytest.raises(NotMaterializedError, match="no TED"):
        open_ted("atari", "Pong/3", warehouse_root)


def _epoch_order(stream, epoch, workers=2):
    """Epoch ``epoch`` as a DataLoader hands it over: the workers' shards of the schedule,
    taken in turn (torch keeps worker order), computed here without any worker."""
    from itertools import zip_longest

    from episode_warehouse.loading.schedule import epoch_items, shard_items

    items = epoch_items(stream.plan, epoch)
    shards = [shard_items(items, 0, 1, w, workers)[:, 0].tolist() for w in range(workers)]
    return [int(i) for turn in zip_longest(*shards) for i in turn if i is not None]


@pytest.mark.parametrize("context", [
    "fork",
    pytest.param("forkserver", marks=pytest.mark.slow(
        reason="the second start method, ~10 s each: fork stays in the default tier, whose "
        "10 minutes it overran")),
])  # fmt: skip
@pytest.mark.parametrize("announce", [True, False], ids=["set_epoch", "no_set_epoch"])
def test_persistent_workers_deliver_every_epoch_exactly_once(warehouse_root, context, announce):
    """DataLoader(..., persistent_workers=True), as most training scripts write it: the workers
    keep their copy of the stream across epochs, and every epoch still delivers each episode
    once, in that epoch's own order (set_epoch reaches them; without it the next epoch starts
    by itself)."""
    sel = select_episodes(ALL, root=warehouse_root)
    stream = EpisodeStream(sel, None, seed=11)
    loader = DataLoader(
        stream,
        batch_size=None,
        num_workers=2,
        persistent_workers=True,
        multiprocessing_context=context,
        collate_fn=no_collate,
    )
    orders = []
    for epoch in range(3):
        if announce:
            stream.set_epoch(epoch)
        seen = [int(item["selection_index"][0]) for item in loader]
        assert sorted(seen) == list(range(len(sel))), epoch  # each episode exactly once
        assert seen == _epoch_order(stream, epoch), epoch  # and that epoch's own order
        orders.append(seen)
    assert orders[0] != orders[1] != orders[2]  # each epoch shuffled with its own seed
    if announce:  # an epoch announced again (the one just ended) is delivered again
        stream.set_epoch(2)
        assert [int(item["selection_index"][0]) for item in loader] == orders[2]


def test_a_slice_longer_than_every_episode_is_refused_by_name(warehouse_root):
    """#43: torchrl's SliceSampler failed at the first sample, in its own words."""
    from episode_warehouse.errors import ConfigError

    td = open_ted("atari", "Pong/1", warehouse_root)
    longest = int(torch.bincount(td["episode"].reshape(-1).long()).max())
    with pytest.raises(ConfigError, match=f"longest has {longest} steps.*at most {longest}"):
        replay_buffer([("atari", "Pong/1")], slice_len=longest + 1, batch_size=longest + 1,
                      root=warehouse_root)  # fmt: skip
    rb = replay_buffer([("atari", "Pong/1")], slice_len=longest, batch_size=longest,
                       root=warehouse_root)  # fmt: skip
    assert rb.sample().batch_size[0] == longest


def test_the_ted_records_the_fps_the_catalog_shows(warehouse_root):
    """#43: a TED's meta.json said fps null where the catalog said the source's rate."""
    from episode_warehouse.catalog.query import run_query
    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.ted.files import read_meta

    _, rows = run_query(
        LocalRoot(warehouse_root), "SELECT fps FROM partitions WHERE partition = 'Pong/1'"
    )
    ted = read_meta(warehouse_root / "ted" / "atari" / "Pong" / "1")
    assert ted.fps is not None and rows == [(ted.fps,)]


def test_slices_say_what_they_leave_out(tmp_path, caplog):
    """EpisodeSliceDataset reads whole slices only (#57 item 16): the steps past each episode's
    last whole slice are counted in a warning, and slices longer than every episode are an
    error naming EpisodeStream, where they gave an empty loader without a word."""
    import logging

    from episode_warehouse.errors import ConfigError
    from episode_warehouse.loading import EpisodeSliceDataset, select_episodes
    from tests.helpers import build_atari

    build_atari(tmp_path, "Pong/1", seed=3, episodes=10, lengths=(30, 60))
    sel = select_episodes("SELECT source, partition, episode, start, length FROM episodes",
                          root=tmp_path)  # fmt: skip
    caplog.set_level(logging.WARNING, "episode_warehouse.loading.torch_datasets")
    ds = EpisodeSliceDataset(sel, slice_len=8)
    want = int((sel.length % 8).sum())
    assert ds.dropped_steps == want and want > 0
    assert len(ds) * 8 + want == int(sel.length.sum())
    assert f"{want} of {int(sel.length.sum())} selected steps" in caplog.text
    with pytest.raises(ConfigError, match="every selected episode is shorter than slice_len"):
        EpisodeSliceDataset(sel, slice_len=int(sel.length.max()) + 1)


def test_a_process_keeps_a_bounded_number_of_partitions_open(warehouse_root, monkeypatch):
    """Past OPEN_PARTITIONS the least recently read partition is closed and reopened when read
    again: every value is the same as with all of them open, and no descriptor is held."""
    import os

    from episode_warehouse.loading import StepWindowDataset, ted_cache

    sel = select_episodes(ALL, root=warehouse_root)
    assert len(sel.partitions) == 2
    first = int(
        sum(n for n, part in zip(sel.length, sel.partition, strict=True) if part == "Pong/1")
    )
    total = int(sum(sel.length))
    pairs = zip(range(0, first, 7), range(first, total, 7), strict=False)  # the shorter ends
    order = [i for pair in pairs for i in pair]
    deltas = {"observation": [-1, 0], "action": [0, 1]}
    expected = StepWindowDataset(sel, deltas)
    wanted = [expected[i] for i in order]
    monkeypatch.setattr(ted_cache, "OPEN_PARTITIONS", 1)
    bounded = StepWindowDataset(sel, deltas)
    for i, want in zip(order, wanted, strict=True):  # alternating partitions: a reopen each
        got = bounded[i]
        assert len(bounded.cache._readers) == 1
        assert (got == want).all()
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            held.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed since
            continue
    assert not [p for p in held if str(warehouse_root) in p]
