"""What the command line shows: one line per partition, progress bars, clean logs.

By default third-party logs stay quiet (warnings only, without Dagster's run-id prefixes), the
domain's progress is a tqdm bar that redraws in place on a terminal (a line every 10 s when
stderr is not one), and each materialized partition is summarized in one line. ``--verbose``
restores every log line. An unexpected exception is one line plus the path of a log file with
its traceback.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import traceback
from datetime import datetime
from pathlib import Path

from episode_warehouse import progress

_DAGSTER_PREFIX = re.compile(r"^\S+ - [0-9a-f]{8}-[0-9a-f-]{27} - (?:[\w\[\]./-]+ - )?")
_NOISY = ("alembic", "dagster", "gcp_storage_emulator", "httpx", "urllib3", "lerobot", "datasets")


class _StripRunIds(logging.Filter):
    """Dagster prefixes captured log lines with the job, the run id and the step: drop that."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        stripped = _DAGSTER_PREFIX.sub("", message)
        if stripped != message:
            record.msg, record.args = stripped, ()
        return True


class _QuietRetries(logging.Filter):
    """dagster_postgres logs each retry of a lost database connection on the root logger; the
    command reports the outcome in one line instead (``--verbose`` shows them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and "dagster_postgres" in record.pathname)


class _Lines:
    """Progress as a line every 10 s (stderr is not a terminal)."""

    def __init__(self, desc: str, total: int | None, unit: str) -> None:
        self.desc, self.total, self.unit, self.done = desc, total, unit, 0
        self.started = self.last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self.last >= progress.LOG_EVERY_S:
            self.last = time.monotonic()
            of = f"/{self.total:,}" if self.total else ""
            print(f"  {self.desc}: {self.done:,}{of} {self.unit}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def _bar(desc: str, total: int | None, unit: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=f"  {desc}", unit=f" {unit}", leave=False, file=sys.stderr)


_handler: logging.Handler | None = None


def setup(verbose: bool) -> None:
    """Configure logging and the progress display for one command."""
    global _handler
    level = logging.INFO if verbose else logging.WARNING
    root = logging.getLogger()
    if _handler is not None:  # a command before this one in the same process (tests)
        root.removeHandler(_handler)
    # the command's own handler; others (a test runner's) are left as they are
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
    _handler.addFilter(_StripRunIds())
    if not verbose:
        _handler.addFilter(_QuietRetries())
    # Dagster raises the level of the loggers it manages during runs: the handler decides
    _handler.setLevel(level)
    root.addHandler(_handler)
    root.setLevel(level)
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.WARNING)
        if not verbose and noisy == "dagster":
            logging.getLogger(noisy).setLevel(logging.ERROR)
    if not verbose:
        progress.set_display(_bar if sys.stderr.isatty() else _Lines)
        quiet_progress_bars_of_dependencies()
        # SVT-AV1 (lerobot's video encoder) prints ~20 "Svt[info]" lines per video it opens,
        # from C, past Python's logging; it reads this variable when an encoder starts
        os.environ.setdefault("SVT_LOG", "1")  # errors only


def quiet_progress_bars_of_dependencies() -> None:
    """``datasets`` draws a bar for every table lerobot writes; one per episode is noise."""
    try:
        import datasets
    except ImportError:
        return
    datasets.disable_progress_bars()


def crash_report(exc: BaseException, logs: Path) -> str:
    """Write ``exc``'s traceback to a file under ``logs``; return the one line to print."""
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"warehouse-{datetime.now():%Y%m%d-%H%M%S}.log"
    path.write_text("".join(traceback.format_exception(exc)))
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"error: unexpected {type(exc).__name__}: {text} (traceback in {path})"


def _count(value: float) -> str:
    return f"{value:,.0f}"


def partition_line(source: str, partition: str, result, seconds: float) -> str:
    """``atari Pong/1  raw 24 files 1.4 MB  decoded 3,229 frames  ted  catalog 14 episodes ...``"""
    parts = []
    kept = []
    for event in result.get_asset_materialization_events():
        name = event.asset_key.to_user_string()
        meta = {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}
        stage, text = _stage_text(name, meta)
        if meta.get("rebuilt") is False:
            kept.append(stage)
        elif text:
            parts.append(text)
    if kept:
        parts.append(f"up to date: {', '.join(kept)}")
    return f"{source} {partition:<12} " + "  ".join(parts) + f"  {seconds:.1f} s"


def size_text(n: float) -> str:
    """Bytes as people read them: ``9.7 KB``, ``1.4 MB``, ``2.1 GB`` (never ``0.0 MB``)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _stage_text(name: str, meta: dict) -> tuple[str, str]:
    if name.endswith(("_files", "_shards")):  # every source's raw stage says the same
        count = meta.get("files", meta.get("shards", 0))
        what = "shards" if "shards" in meta else "files"
        return "raw", f"raw {_count(count)} {what} {size_text(meta.get('bytes', 0))}"
    if name.endswith("_episodes"):
        return "decoded", f"decoded {_count(meta.get('frames', 0))} frames"
    if name.endswith("_ted"):
        return "ted", "ted"
    if name.endswith("_statistics"):
        return "statistics", ""  # derived from the TED: not worth a word on the line
    if name.endswith("_catalog_rows"):
        return "catalog", f"catalog {meta.get('episodes', 0)} episodes"
    if name.endswith("lerobot_export"):
        return "lerobot", f"lerobot {_count(meta.get('frames', 0))} frames"
    if name.endswith("_standardized"):
        dropped = meta.get("dropped_episodes") or 0
        steps, episodes = _count(meta.get("steps", 0)), meta.get("episodes", 0)
        text = f"standardized {steps} steps {episodes} episodes"
        return "standardized", text + (f" ({dropped} dropped)" if dropped else "")
    return name, name
