"""Benchmark: one sensor tick over a local mirror of multi-GB checkpoint files.

Ours lists with ``stat`` alone (size and mtime); the baseline is the listing as it was before
(the same listing plus a crc32c of every file, what ``LocalBlobStore.list`` used to compute on
every tick, cached only per process). Both run in the same process on the same files; the
page cache is dropped before the baseline where this machine allows it.

    python -m bench.sensor_tick                 # 2 runs x 3 files x 3 GB = 18 GB, written once
    python -m bench.sensor_tick --files 2 --gb 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

from bench.measure import save_report, scaled

DATA = Path(__file__).parent / "data"


def write_mirror(files: int, gb: float) -> Path:
    """``<root>/Pong/{1,2}/replay_logs/$store$_observation_ckpt.<i>.gz`` of ``gb`` GB each (real
    bytes on disk, written once and kept)."""
    root = DATA / f"sensor-mirror-{files}x{gb:g}GB"
    if (root / "done").exists():
        return root
    block = np.random.default_rng(0).integers(0, 256, 64 << 20, dtype=np.uint8).tobytes()
    size = int(gb * (1 << 30))
    for run in (1, 2):
        folder = root / "Pong" / str(run) / "replay_logs"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            with open(folder / f"$store$_observation_ckpt.{i}.gz", "wb") as fh:
                left = size
                while left:
                    n = min(left, len(block))
                    fh.write(block[:n])
                    left -= n
    (root / "done").write_text("")
    return root


def _bytes_read() -> int:
    """Bytes this process has read through read(2) so far (``rchar``)."""
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def main() -> None:
    from episode_warehouse.blobstore import file_crc32c, open_blob_store
    from episode_warehouse.sources.atari.fingerprints import atari_fingerprints

    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=3, help="files per run (2 runs)")
    parser.add_argument("--gb", type=float, default=scaled(3.0, 0.01), help="size of each file")
    args = parser.parse_args()
    root = write_mirror(args.files, args.gb)
    store = open_blob_store(str(root))
    cold = drop_caches()
    read_before = _bytes_read()
    t = time.perf_counter()
    ours = atari_fingerprints(store)
    ours_s = time.perf_counter() - t
    ours_read = _bytes_read() - read_before
    cold = drop_caches() and cold
    t = time.perf_counter()
    blobs = store.list("")
    for blob in blobs:
        file_crc32c(root / blob.name)  # what every tick used to do
    baseline_s = time.perf_counter() - t
    total = sum(b.size for b in blobs)
    report = {
        "files": len(blobs),
        "bytes": total,
        "partitions": sorted(ours),
        "page_cache_dropped": cold,
        "ours_tick_s": round(ours_s, 4),
        "baseline_tick_with_crc32c_s": round(baseline_s, 2),
        "baseline_over_ours": round(baseline_s / ours_s, 1),
        "baseline_MB_per_s": round(total / 1e6 / baseline_s, 1),
        "bytes_read_by_ours": ours_read,
    }
    print(json.dumps(report, indent=1))
    save_report("sensor_tick", report)
    os.sync()


if __name__ == "__main__":
    main()
