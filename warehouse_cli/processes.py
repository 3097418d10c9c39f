"""Start service processes in their own process group, and stop them with their whole tree.

``stop`` sends SIGTERM to the process group, waits, then SIGKILLs the group and every
descendant recorded before the stop (children that moved to another group or session, or that
outlived their parent), so nothing of the tree is left behind. ``signals_stop`` makes the
foreground command stop on Ctrl-C and SIGTERM, and kill at once on a second signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren, ...), from /proc."""
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return []
    return [d for c in children for d in (c, *descendants(c))]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def start(cmd: list[str], *, env: dict, cwd: Path | None = None, log=None) -> subprocess.Popen:
    """``cmd`` in a new session (its own process group), output to ``log`` if given."""
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT if log else None,
    )


def _signal_all(pids: list[int], pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop ``proc`` and its whole tree: SIGTERM, then SIGKILL after ``timeout`` seconds."""
    tree = [proc.pid, *descendants(proc.pid)]
    _signal_all(tree, proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in tree):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.2)
    tree += [d for p in tree for d in descendants(p)]  # anything started meanwhile
    _signal_all(tree, proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


@contextlib.contextmanager
def signals_stop(kill_now: Callable[[], None]) -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM raise KeyboardInterrupt once (the caller then stops
    its processes gracefully); a second signal calls ``kill_now`` instead."""
    received: list[int] = []

    def handler(signum, frame):
        if received:
            kill_now()
            return
        received.append(signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
