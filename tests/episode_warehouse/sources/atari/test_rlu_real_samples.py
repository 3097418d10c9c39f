"""Real RL Unplugged Atari files, written by the TensorFlow Datasets authors from real Asterix
play (``../shared/samples/rl_unplugged_atari``, laid out as the bucket is), read in place.

Nobody here wrote them, so they check what our own fixture writer cannot: that every logged
row is a transition (Asterix/1: one episode of 310 rows gives 310 steps, not 309), that the
recorded ``episode_return`` is the sum of all of them, and that both reward fields are the
clipped reward (Asterix scores 50 a point; the rows say 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.catalog import run_query
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.rlu_episode import parse_record
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
from episode_warehouse.tfrecord.records import iter_gzip_records

# partition -> (checkpoint_idx, episode_idx, rows, recorded return), from the files' own records
EXPECTED = {
    "Asterix/1": [(1, 181, 310, 17.0)],
    "Asterix/2": [(1, 181, 310, 17.0), (0, 424, 244, 4.0)],
}


@pytest.fixture(scope="module")
def warehouse(shared_samples, tmp_path_factory):
    store = open_blob_store(str(shared_samples / "rl_unplugged_atari"))  # ATARI_REPLAY_URL
    layout = WarehouseLayout.local(tmp_path_factory.mktemp("real-rlu"))
    for key in EXPECTED:
        game, run = key.split("/")
        target = layout.raw_dir("atari", key)
        mirror_run(
            store,
            game,
            int(run),
            target,
            CheckpointSubset("all"),
            root=layout.root,
            code_version="t",
        )
        decode_atari(layout, key, code_version="t", workers=2)
        build_ted_stage(layout, "atari", key, code_version="t")
        publish_catalog_rows(layout, "atari", key, code_version="t", run_id="real")
    return layout


def _records(shared_samples, key):
    game, run = key.split("/")
    path = shared_samples / "rl_unplugged_atari" / game / f"run_{run}-00000-of-00001"
    with open(path, "rb") as fh:
        return [parse_record(d, path.name) for _, d in iter_gzip_records(fh, path.name)]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_every_logged_row_is_a_step(warehouse, shared_samples, key):
    td = open_ted("atari", key, root=warehouse.folder)
    records = _records(shared_samples, key)
    assert (
        td.batch_size[0]
        == sum(n for *_, n, _ in EXPECTED[key])
        == {
            "Asterix/1": 310,
            "Asterix/2": 554,
        }[key]
    )
    assert np.array_equal(td["action"].numpy(), np.concatenate([r.actions for r in records]))
    assert np.array_equal(
        td["next", "reward"][:, 0].numpy(), np.concatenate([r.rewards for r in records])
    )
    assert set(np.unique(td["next", "reward"].numpy())) <= {-1.0, 0.0, 1.0}  # clipped
    ends = np.flatnonzero(td["next", "done"][:, 0].numpy())
    assert ends.tolist() == np.cumsum([r.steps for r in records]).__sub__(1).tolist()
    assert td["next", "terminated"][ends, 0].all()  # both were game over (discount 0)
    assert not td["next", "observation"][ends].any()  # the frame after was never logged
    assert td["observation"][ends].any()  # but the last row's own frame is real


@pytest.mark.integration  # a catalog query (the sandbox)
def test_the_catalog_returns_are_the_recorded_ones(warehouse):
    _, rows = run_query(
        warehouse.root,
        'SELECT partition, checkpoint_idx, episode_idx, length, "return", recorded_return '
        "FROM episodes ORDER BY partition, episode",
    )
    got = {}
    for partition, ckpt, ep, length, ret, recorded in rows:
        assert ret == recorded
        got.setdefault(partition, []).append((ckpt, ep, length, ret))
    assert got == EXPECTED
