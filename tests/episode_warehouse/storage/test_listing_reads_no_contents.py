"""Discovery reads metadata, never file contents: listing a mirror of multi-GB files reads no
byte of them, and a changed file still changes its partition's fingerprint."""

import os
import time

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.sources.atari.fingerprints import atari_fingerprints

GB = 1 << 30


def _read_bytes() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


def _mirror(root, files_per_run=6, size=3 * GB):
    for run in (1, 2):
        folder = root / "Pong" / str(run) / "replay_logs"
        folder.mkdir(parents=True)
        for i in range(files_per_run):
            with open(folder / f"$store$_observation_ckpt.{i}.gz", "wb") as fh:
                fh.truncate(size)  # a sparse 3 GB file, as large as a real observation file


def test_a_tick_over_36_gb_reads_nothing(tmp_path):
    _mirror(tmp_path)
    store = open_blob_store(str(tmp_path))
    before, started = _read_bytes(), time.perf_counter()
    first = atari_fingerprints(store)
    seconds = time.perf_counter() - started
    read = _read_bytes() - before
    assert sorted(first) == ["Pong/1", "Pong/2"]
    assert read < 1 << 20, f"listing read {read} bytes"  # 36 GB listed, < 1 MiB read
    assert seconds < 5
    path = tmp_path / "Pong" / "2" / "replay_logs" / "$store$_observation_ckpt.3.gz"
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))  # rewritten: new mtime
    second = atari_fingerprints(store)
    assert second["Pong/1"] == first["Pong/1"] and second["Pong/2"] != first["Pong/2"]
