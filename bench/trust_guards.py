"""Benchmark: what the third trust round's guards (#42) cost, each against the work it guards,
measured in the same run.

- the finite-values rule of the decoded writer (every float action, state and reward read once
  more before ``meta.json``), against writing those arrays;
- a cached TED's crc32c check on a process's first open, against reading its files once
  (what memory-mapping them costs a trainer's first epoch anyway);
- Landlock in the SQL child (``confine_writes``), against the child's start (``bench.sql_sandbox``
  measures a whole query: ~300 ms);
- a LeRobot dataset's totals check (footers and each data file's ``episode_index``), against
  opening its metadata without it.

    python -m bench.trust_guards [--rows 2000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.measure import median_ms, save_report, scaled
from episode_warehouse.blobstore import file_crc32c
from episode_warehouse.decoded.format import ArraySpec, episode_table
from episode_warehouse.decoded.writer import DecodedWriter


def _decoded(folder: Path, rows: int, rng: np.random.Generator) -> tuple[DecodedWriter, pa.Table]:
    writer = DecodedWriter(folder)
    for key, width, role in (("action", 7, "step"), ("observation/state", 8, "observation")):
        writer.put(ArraySpec(key, (width,), "<f4", role), rng.normal(size=(rows, width)))
    writer.put(ArraySpec("reward", (), "<f4", "reward"), rng.normal(size=rows))
    starts = np.arange(0, rows, 500)
    episodes = episode_table(
        {
            "episode": np.arange(len(starts)),
            "start": starts,
            "length": np.minimum(500, rows - starts),
            "source_files": [["shard-00000"]] * len(starts),
        }
    )
    return writer, episodes


def _write_only(folder: Path, rows: int) -> None:
    _decoded(folder, rows, np.random.default_rng(0))


def _check_only(writer: DecodedWriter, episodes: pa.Table) -> None:
    writer._check_values(episodes, {"source": "bench", "partition": "p"})


_CHILD = (
    "import sys, tempfile, time; t = time.perf_counter(); "
    "from episode_warehouse.catalog.landlock import confine_writes; "
    "ok = confine_writes(tempfile.mkdtemp()) if sys.argv[1] == '1' else None; "
    "print((time.perf_counter() - t) * 1000)"
)


def _landlock_ms(confine: bool) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, "1" if confine else "0"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(2_000_000, 20000))
    parser.add_argument("--repeats", type=int, default=scaled(5, 1))
    args = parser.parse_args()
    report: dict = {"rows": args.rows}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        write = median_ms(
            lambda: _write_only(Path(tempfile.mkdtemp(dir=base)), args.rows), args.repeats
        )
        writer, episodes = _decoded(base / "checked", args.rows, np.random.default_rng(0))
        check = median_ms(lambda: _check_only(writer, episodes), args.repeats)
        mb = sum(p.stat().st_size for p in (base / "checked").rglob("*.npy")) / 1e6
        report["finite_rule"] = {
            "float_mb": round(mb, 1), "write_ms": write, "check_ms": check,
            "ratio_to_write": round(check / write, 3),
        }  # fmt: skip

        blob = base / "ted.npy"
        blob.write_bytes(np.random.default_rng(1).integers(0, 255, 512 << 20, np.uint8).tobytes())
        read = median_ms(lambda: blob.read_bytes(), args.repeats)
        crc = median_ms(lambda: file_crc32c(blob), args.repeats)
        report["first_open_crc32c"] = {
            "mb": 512 * 1.048576, "read_ms": read, "crc32c_ms": crc,
            "ratio_to_read": round(crc / read, 2),
            "gb_per_s": round(0.536870912 / (crc / 1000), 2),
        }  # fmt: skip

    started = time.perf_counter()
    plain = [_landlock_ms(False) for _ in range(args.repeats)]
    confined = [_landlock_ms(True) for _ in range(args.repeats)]
    report["landlock"] = {
        "import_only_ms": round(float(np.median(plain)), 2),
        "import_and_confine_ms": round(float(np.median(confined)), 2),
        "confine_ms": round(float(np.median(confined) - np.median(plain)), 2),
        "seconds": round(time.perf_counter() - started, 1),
    }

    from episode_warehouse.sources.lerobot import dataset as lerobot_dataset
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    with tempfile.TemporaryDirectory() as tmp:
        spec = LeRobotSpec(lengths=tuple([60] * 40), cameras={}, data_files_size_in_mb=0.05)
        folder = write_lerobot_dataset(spec, Path(tmp))
        full = median_ms(lambda: lerobot_dataset.open_lerobot_folder(folder), args.repeats)
        real_check = lerobot_dataset._check_totals
        lerobot_dataset._check_totals = lambda *a: None  # the baseline: metadata without it
        try:
            without = median_ms(lambda: lerobot_dataset.open_lerobot_folder(folder), args.repeats)
        finally:
            lerobot_dataset._check_totals = real_check
        files = len(list(folder.rglob("data/*/*.parquet")))
        report["lerobot_totals"] = {
            "episodes": 40, "data_files": files, "open_ms": full, "open_without_check_ms": without,
            "ratio": round(full / without, 2),
        }  # fmt: skip
    print(json.dumps(report, indent=1))
    save_report("trust_guards", report)


if __name__ == "__main__":
    main()
