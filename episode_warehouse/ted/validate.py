"""Consistency checks of a published TED folder (used by the Dagster asset checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.ted.layout import EPISODES


@dataclass
class TedReport:
    """Problems found (empty = consistent) and the figures that were compared."""

    problems: list[str] = field(default_factory=list)
    rows: int = 0
    episodes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def check_ted(folder: Path) -> TedReport:
    """Shapes and dtypes, episode boundaries, finite rewards, and counts vs episodes.parquet.

    A TED without ``("next", "reward")`` is consistent: sources that record no reward (LeRobot
    teleoperation datasets) get none rather than an invented one."""
    from episode_warehouse.ted.open import open_ted_folder

    episodes = pq.read_table(Path(folder) / EPISODES)
    try:
        td = open_ted_folder(folder)
    except CorruptInputError as exc:  # a file that cannot be opened: that is the finding
        return TedReport(problems=[str(exc)], episodes=episodes.num_rows)
    n = td.batch_size[0]
    report = TedReport(rows=n, episodes=episodes.num_rows)
    p = report.problems
    for key in td.keys(True, True):
        if td.get(key).shape[0] != n:
            p.append(f"{key}: {td.get(key).shape[0]} rows, expected {n}")
    flags: list[str | tuple[str, str]] = [("next", "done"), ("next", "terminated")]
    flags += [("next", "truncated"), "done", "terminated", "truncated"]
    for key in flags:
        if key not in td.keys(True, True):
            p.append(f"{key}: missing")
            return report
    has_reward = ("next", "reward") in td.keys(True, True)
    for key in flags + ([("next", "reward")] if has_reward else []):
        if tuple(td.get(key).shape[1:]) != (1,):
            p.append(f"{key}: trailing dim {tuple(td.get(key).shape[1:])}, expected (1,)")
    if has_reward:
        reward = td["next", "reward"].numpy()
        if reward.dtype not in (np.float32, np.float64):
            p.append("next/reward is not float32 or float64 (Minari's, kept as recorded)")
        if not np.isfinite(reward).all():
            p.append(f"{int((~np.isfinite(reward)).sum())} rewards are NaN or infinite")
    start = episodes.column("start").to_numpy()
    length = episodes.column("length").to_numpy()
    if int(length.sum()) != n or (
        len(start) and (start[0] != 0 or (start[1:] != (start + length)[:-1]).any())
    ):
        p.append("episodes.parquet does not tile the TED rows")
        return report
    episode = td["episode"].numpy()
    if len(start) and (
        int(episode.max()) + 1 != len(start)
        or not np.array_equal(np.flatnonzero(td["is_init"].numpy()), start)
    ):
        p.append("is_init / episode ids disagree with episodes.parquet")
    done = np.flatnonzero(td["next", "done"].numpy()[:, 0])
    if not np.array_equal(done, start + length - 1):
        p.append("('next','done') is not set exactly on each episode's last step")
    if td["done"].any() or td["terminated"].any() or td["truncated"].any():
        p.append("root done/terminated/truncated must all be False")
    _check_cameras(Path(folder), n, p)
    return report


def _foreign_frames(path: Path, offsets: np.ndarray, video: bool) -> np.ndarray:
    """Rows whose stored bytes are not a whole frame of a kind a camera may hold (JPEG, PNG,
    Zstandard; a video camera's references): the codec table's rule, no decoding."""
    from episode_warehouse.frames.codec import CODECS, whole_frames

    sizes = np.diff(offsets)
    rows = np.flatnonzero(sizes > 0)
    if not len(rows):
        return rows
    data = np.memmap(path, dtype=np.uint8, mode="r")
    kinds = {"video"} if video else {c.kind for c in CODECS if c.decode is not None}
    ok = whole_frames(data, offsets[rows], offsets[rows + 1], kinds)
    return rows[~ok]


def _check_cameras(folder: Path, rows: int, problems: list[str]) -> None:
    """Each camera stored encoded: one frame a step and one more, offsets starting at 0,
    ascending, ending at the file's size, no empty frame but the last, every frame's bytes
    of a kind a camera holds (their signature), and its first and last frames decoding to the
    camera's shape (every frame was decoded once when it was built)."""
    from episode_warehouse.frames.rows import open_frames
    from episode_warehouse.ted.files import frame_files, read_meta

    for file, (shape, dtype, videos) in frame_files(read_meta(folder)).items():
        try:
            frames = open_frames(folder / file, shape, dtype, videos, folder)
            if len(frames) != rows + 1:
                problems.append(f"{file}: {len(frames)} frames, expected {rows + 1}")
                continue
            foreign = _foreign_frames(folder / file, np.asarray(frames.offsets), bool(videos))
            if len(foreign):
                problems.append(
                    f"{file}: {len(foreign)} frame(s) are not JPEG, PNG or Zstandard bytes "
                    f"(the first: row {int(foreign[0])})"
                )
                continue
            for row in sorted({0, rows - 1}) if rows else []:
                frames[row]
        except CorruptInputError as exc:
            problems.append(f"{file}: {exc}")
