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
    sel = select_episodes(ALL, root=warehouse_root)
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
