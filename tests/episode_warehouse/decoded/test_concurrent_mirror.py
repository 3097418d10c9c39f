"""A decoder never reads a raw folder that is being rewritten: re-mirroring waits for readers."""

import threading
import time

import numpy as np

from episode_warehouse.atomic import reading
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.decoded import open_decoded
from episode_warehouse.incremental import published
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.storage.local import LocalRoot
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run


def _write_source(src, seed):
    rng = np.random.default_rng(seed)
    episodes = [play_episode(rng, int(n)) for n in rng.integers(30, 90, 12)]
    write_run(src / "Pong" / "1" / "replay_logs", episodes, 300, final_log=False, compresslevel=1)


def _mirror(src, layout):
    return mirror_run(
        open_blob_store(str(src)),
        "Pong",
        1,
        layout.raw_dir("atari", "Pong/1"),
        CheckpointSubset("all"),
        root=layout.root,
        code_version="t",
    )[0]


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted((folder / "replay_logs").iterdir())}


def test_a_remirror_waits_for_the_reader(tmp_path):
    src, layout = tmp_path / "src", WarehouseLayout.local(tmp_path / "wh")
    _write_source(src, 0)
    first = _mirror(src, layout)
    raw = layout.raw_dir("atari", "Pong/1")
    _write_source(src, 1)  # the source changes: every file is rewritten
    remirror: dict = {}
    with reading(raw):
        before = _files(raw)
        thread = threading.Thread(target=lambda: remirror.update(built=_mirror(src, layout)))
        thread.start()
        time.sleep(1.5)  # long enough to copy the new files; the publish must still wait
        assert thread.is_alive()
        assert (
            _files(raw) == before and published(LocalRoot(tmp_path), raw).version == first.version
        )
    thread.join(30)
    assert (
        remirror["built"].rebuilt and published(LocalRoot(tmp_path), raw).version != first.version
    )
    assert _files(raw) != before


def _clean_decode(tmp_path, seed):
    src, layout = tmp_path / f"src-{seed}", WarehouseLayout.local(tmp_path / f"clean-{seed}")
    _write_source(src, seed)
    _mirror(src, layout)
    decode_atari(layout, "Pong/1", code_version="t", workers=1)
    return _arrays(layout)


def _arrays(layout):
    decoded = open_decoded(layout.decoded_dir("atari", "Pong/1"))
    return {k: np.asarray(decoded.array(k)[:]) for k in ("observation", "action", "reward")}


def test_decoding_while_the_source_changes_decodes_one_whole_version(tmp_path):
    versions = [_clean_decode(tmp_path, seed) for seed in (0, 1)]
    src, layout = tmp_path / "src", WarehouseLayout.local(tmp_path / "wh")
    _write_source(src, 0)
    _mirror(src, layout)
    _write_source(src, 1)
    threads = [
        threading.Thread(target=lambda: _mirror(src, layout)),
        threading.Thread(
            target=lambda: decode_atari(layout, "Pong/1", code_version="t", workers=1)
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ours = _arrays(layout)
    matches = [all(np.array_equal(ours[k], v[k]) for k in ours) for v in versions]
    assert matches.count(True) == 1  # all of one version, nothing of the other
