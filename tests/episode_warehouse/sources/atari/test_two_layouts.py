"""The same episodes written in both Atari layouts, by the two fixture writers, give the same
TED: one schema per source, so one selection can span Dopamine and RL Unplugged runs.

The writers follow their format specs independently (``dopamine_writer.py`` simulates the
logged replay buffer with padding and a circular cursor, ``rlu_writer.py`` writes TFRecord
Examples by hand); what differs by nature is only where the rows came from (checkpoint files,
the RL Unplugged ids), never a step's values.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from episode_warehouse import open_ted
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.catalog import run_query
from episode_warehouse.loading import (
    EpisodeSliceDataset,
    replay_buffer,
    select_episodes,
    ted_collate,
)
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
from warehouse_fixtures import rlu_writer
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run

pytestmark = pytest.mark.integration  # decode worker processes


def _build(src, root, game, run):
    layout = WarehouseLayout.local(root)
    key = f"{game}/{run}"
    mirror_run(open_blob_store(str(src)), game, run, layout.raw_dir("atari", key),
               CheckpointSubset("all"), root=layout.root, code_version="t")  # fmt: skip
    decode_atari(layout, key, code_version="t", workers=1)
    build_ted_stage(layout, "atari", key, code_version="t")
    publish_catalog_rows(layout, "atari", key, code_version="t", run_id="r")
    return layout


def test_both_layouts_give_the_same_ted(tmp_path):
    rng = np.random.default_rng(3)
    episodes = [play_episode(rng, int(n)) for n in (120, 75, 230, 9, 160)]
    src = tmp_path / "src"
    # Dopamine: a 300-row buffer, so episodes cross checkpoint files and a final log closes it
    write_run(src / "Pong" / "3" / "replay_logs", episodes, 300, compresslevel=1)
    records = [rlu_writer.from_game(e, 0, i, terminal=True) for i, e in enumerate(episodes)]
    rlu_writer.write_run(src / "Pong", 4, [records])
    _build(src, tmp_path / "wh", "Pong", 3)
    layout = _build(src, tmp_path / "wh", "Pong", 4)
    dopamine = open_ted("atari", "Pong/3", root=layout.folder)
    rlu = open_ted("atari", "Pong/4", root=layout.folder)

    assert set(dopamine.keys(True, True)) == set(rlu.keys(True, True))
    for key in dopamine.keys(True, True):
        ours, theirs = dopamine[key][:], rlu[key][:]
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), key
    # and against the game itself: every step of every episode, the last one's reward too
    assert torch.equal(
        rlu["next", "reward"][:, 0], torch.from_numpy(np.concatenate([e.reward for e in episodes]))
    )
    for partition in ("Pong/3", "Pong/4"):
        _, rows = run_query(
            layout.root,
            'SELECT length, "return", terminated, complete FROM episodes '
            f"WHERE partition = '{partition}' ORDER BY episode",
        )
        assert rows == [(len(e.action), float(e.reward.sum()), True, True) for e in episodes]

    # one schema: a selection spanning both layouts collates into batches
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes ORDER BY partition",
        root=layout.folder,
    )
    loader = DataLoader(EpisodeSliceDataset(sel, 8), batch_size=16, collate_fn=ted_collate)
    batches = list(loader)
    assert sum(b.batch_size[0] for b in batches) == len(EpisodeSliceDataset(sel, 8))
    assert {int(r) for b in batches for r in b["selection_index"][:, 0]} == set(range(10))
    replay_buffer(sel, slice_len=8, batch_size=64).sample()
