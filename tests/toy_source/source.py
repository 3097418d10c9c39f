"""The toy source's domain part: a point mass on a plane, one ``.npz`` file per episode.

Its raw folder is a copy of ``<folder>/<partition>/episode_<n>.npz`` (arrays ``state`` (T, 2)
float32, ``cam`` (T, 3, 8, 8) uint8, ``action`` (T,) int64, ``reward`` (T,) float32,
``terminal`` (T,) bool); the decoder writes the decoded format with ``observation/state`` and
``observation/cam`` as observations.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from episode_warehouse.decoded.format import ArraySpec, episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.stage import decode_from_raw
from episode_warehouse.decoded.writer import DecodedWriter
from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.source import Source
from episode_warehouse.storage import Root

FPS = 20
_KEY = re.compile(r"^[a-z]+$")
SPECS = {
    "observation/state": ArraySpec("observation/state", (2,), "<f4", "observation"),
    "observation/cam": ArraySpec("observation/cam", (3, 8, 8), "|u1", "observation"),
    "action": ArraySpec("action", (), "<i8", "step"),
    "reward": ArraySpec("reward", (), "<f4", "reward"),
    "is_terminal": ArraySpec("is_terminal", (), "|b1", "terminal"),
}
FIELDS = {"observation/state": "state", "observation/cam": "cam", "action": "action",
          "reward": "reward", "is_terminal": "terminal"}  # fmt: skip


def check_key(key: str) -> str:
    if not _KEY.match(key or ""):
        raise PartitionKeyError("not a toy partition", subject=repr(key), fix="use a-z only")
    return key


SOURCE = Source(name="toy", check_partition=check_key, fps=lambda partition: FPS)


def write_episodes(folder: Path, partition: str, lengths: list[int], seed: int) -> list[dict]:
    """The toy "simulator": episodes of a random walk, written as the source holds them, and
    returned as the ground truth."""
    rng = np.random.default_rng(seed)
    out = []
    (folder / partition).mkdir(parents=True, exist_ok=True)
    for n, length in enumerate(lengths):
        action = rng.integers(0, 4, length).astype(np.int64)
        moves = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)[action]
        state = np.cumsum(np.vstack([np.zeros((1, 2), np.float32), moves[:-1]]), axis=0)
        episode = {
            "state": state.astype(np.float32),
            "cam": (np.arange(length, dtype=np.uint8)[:, None, None, None] * 7 + n)
            * np.ones((1, 3, 8, 8), np.uint8),
            "action": action,
            "reward": -np.abs(state).sum(axis=1).astype(np.float32),
            "terminal": np.arange(length) == length - 1 if n % 2 == 0 else np.zeros(length, bool),
        }
        np.savez(folder / partition / f"episode_{n}.npz", **episode)
        out.append(episode)
    return out


def mirror(
    folder: Path, partition: str, target: Path, *, root: Root, code_version: str
) -> Built[RawRecord]:
    """The raw stage: the partition's files copied, rebuilt when a file's size or mtime moved."""
    files = sorted((folder / partition).glob("episode_*.npz"))
    listing = {f.name: {"size": f.stat().st_size, "mtime_ns": f.stat().st_mtime_ns} for f in files}

    def build(tmp: Path) -> RawRecord:
        for f in files:
            shutil.copy2(f, tmp / f.name)
        return RawRecord(format="toy-raw", source_url=str(folder), files=listing)

    inputs = {"files": listing, "code_version": code_version}
    return build_if_changed(root, target, inputs, build, record_type=RawRecord)


def decode(layout: WarehouseLayout, key: str, *, code_version: str) -> Built[DecodedRecord]:
    """The decoded stage, through the shape every source's decode stage has."""

    def make_build(raw_dir: Path, raw: RawRecord, lineage: dict):
        def build(tmp: Path) -> DecodedRecord:
            writer = DecodedWriter(tmp)
            starts, lengths, returns, terminated = [], [], [], []
            for name in sorted(raw.files, key=lambda n: int(n[8:-4])):
                with np.load(raw_dir / name) as episode:
                    for key, spec in SPECS.items():
                        writer.append(spec, episode[FIELDS[key]])
                    starts.append(sum(lengths))
                    lengths.append(len(episode["action"]))
                    returns.append(float(episode["reward"].astype(np.float64).sum()))
                    terminated.append(bool(episode["terminal"][-1]))
            done = np.array(terminated)
            table = episode_table(
                {
                    "episode": np.arange(len(starts), dtype=np.int64),
                    "start": np.array(starts, np.int64),
                    "length": np.array(lengths, np.int64),
                    "return": np.array(returns),
                    "terminated": done,
                    "truncated": ~done,
                    "true_start": np.ones(len(starts), bool),
                    "complete": done,
                    "source_files": [[n] for n in sorted(raw.files)],
                }
            )
            return writer.finish(table, lineage)

        return build

    return decode_from_raw(layout, "toy", key, "toy_files", RawRecord, code_version, make_build)
