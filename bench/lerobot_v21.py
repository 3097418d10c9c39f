"""Benchmark: a LeRobot v2.1 dataset (AV1 video, as most published ones) ingested to the catalog
as it is, against lerobot 0.6.1's v2.1 -> v3.0 converter alone on the same local dataset, same
run: the converter is what a user runs today before a v3-only reader can read it. Also: our
ingest of the converted v3.0 copy. Goal (#71): ingest faster than the conversion alone.

    python -m bench.lerobot_v21     # writes bench/data/lerobot-v21 with lerobot 0.3.3's writer

Each step is a command as a user runs it (imports and Dagster's start included), in a fresh
process, and, apart, the work alone (imports done first: our decoded and TED stages, lerobot's
``convert_dataset``):
``warehouse materialize lerobot REPO --through catalog`` (LEROBOT_URL at the folder) and
``python -m lerobot.scripts.convert_dataset_v21_to_v30 --root ... --push-to-hub=false``; best of
``--rounds`` alternating rounds, each on a fresh copy and a fresh warehouse root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.measure import save_report, scaled

PROJECT = Path(__file__).resolve().parents[1]
DATA = PROJECT / "bench" / "data" / "lerobot-v21"
REPO = "bench/v21"


def _side_python() -> str:
    out = subprocess.run([str(PROJECT / "scripts" / "side_env.sh"), "lerobot-0.3.3"],
                         check=True, capture_output=True, text=True,
                         env={**os.environ, "SIDE_ENV_PYTHON": sys.executable})  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


def _write(episodes: int, length: int) -> Path:
    folder = DATA / "source" / REPO
    stamp = DATA / "source" / "written.json"
    want = {"episodes": episodes, "length": length}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return folder
    shutil.rmtree(DATA / "source", ignore_errors=True)
    lengths = ",".join([str(length)] * episodes)
    subprocess.run(
        [_side_python(), str(PROJECT / "warehouse_fixtures" / "lerobot_v21_side.py"), "write",
         str(folder), "--repo-id", REPO, "--video", "--lengths", lengths],
        check=True, capture_output=True,
    )  # fmt: skip
    stamp.write_text(json.dumps(want))
    return folder


def _timed(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{done.stderr[-3000:]}")
    return seconds


def _ingest(source_parent: Path, work: Path) -> float:
    root = work / "warehouse"
    return _timed(
        [str(PROJECT / "warehouse"), "materialize", "lerobot", REPO, "--through", "catalog"],
        {"LEROBOT_URL": str(source_parent), "EPISODE_WAREHOUSE_ROOT": str(root),
         "DAGSTER_HOME": str(work / "dagster")},
    )  # fmt: skip


def _convert(folder: Path, work: Path) -> tuple[float, Path]:
    copy = work / "convert" / REPO
    shutil.copytree(folder, copy)
    seconds = _timed(
        [sys.executable, "-m", "lerobot.scripts.convert_dataset_v21_to_v30", f"--repo-id={REPO}",
         f"--root={copy}", "--push-to-hub=false"],
    )  # fmt: skip
    return seconds, copy


_WORK = """
import shutil, sys, time
from pathlib import Path
folder, work, which = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
if which == "ingest":
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.ted import build_ted
    import torchcodec.decoders  # imported by the decoder on first use: not the work
    t = time.perf_counter()
    source = open_lerobot_folder(folder)
    build_if_changed(LocalRoot(work), work / "dec", {"bench": 1},
                     lambda tmp: decode_lerobot(source, tmp))
    (work / "ted").mkdir()
    build_ted(open_decoded(work / "dec"), work / "ted")
else:
    from lerobot.scripts.convert_dataset_v21_to_v30 import convert_dataset
    copy = work / "convert" / folder.name
    shutil.copytree(folder, copy)
    t = time.perf_counter()
    convert_dataset("bench/v21", root=copy, push_to_hub=False)
print(time.perf_counter() - t)
"""


def _work(which: str, folder: Path, work: Path) -> float:
    """The work alone, in a fresh process with its imports done first: decoded + TED for
    ours, ``convert_dataset`` for lerobot's."""
    work.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", _WORK, str(folder), str(work), which],
                          capture_output=True, text=True, cwd=PROJECT)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{which} failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=scaled(50, 3))
    parser.add_argument("--length", type=int, default=scaled(100, 12))
    parser.add_argument("--rounds", type=int, default=scaled(2, 1))
    args = parser.parse_args()
    folder = _write(args.episodes, args.length)
    ingest, convert, ingest_v30, work_ours, work_theirs = [], [], [], [], []
    for r in range(args.rounds):
        work = DATA / f"round-{r}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        ingest.append(_ingest(folder.parents[1], work / "v21"))
        seconds, converted = _convert(folder, work)
        convert.append(seconds)
        # the converter leaves the v3.0 dataset at --root (the v2.1 copy beside it, *_old)
        ingest_v30.append(_ingest(converted.parents[1], work / "v30"))
        work_ours.append(_work("ingest", folder, work / "work-ours"))
        work_theirs.append(_work("convert", folder, work / "work-theirs"))
        shutil.rmtree(work)
    frames = args.episodes * args.length
    report = {
        "dataset": {"episodes": args.episodes, "frames": frames, "camera": "64x96 AV1",
                    "written_by": "lerobot 0.3.3 (LeRobotDataset.create)"},
        "ingest_v21_to_catalog_s": round(min(ingest), 2),
        "lerobot_convert_v21_to_v30_s": round(min(convert), 2),
        "ingest_converted_v30_to_catalog_s": round(min(ingest_v30), 2),
        "ratio_convert_over_ingest": round(min(convert) / min(ingest), 2),
        "ratio_convert_plus_v30_ingest_over_ingest": round(
            (min(convert) + min(ingest_v30)) / min(ingest), 2
        ),
        "work_only_ours_decoded_and_ted_s": round(min(work_ours), 2),
        "work_only_lerobot_convert_dataset_s": round(min(work_theirs), 2),
        "work_only_ratio_convert_over_ours": round(min(work_theirs) / min(work_ours), 2),
        "rounds": args.rounds,
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    save_report("lerobot_v21", report)


if __name__ == "__main__":
    main()
