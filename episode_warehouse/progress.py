"""Progress of long work (downloads, decoding, exports), reported through one small interface.

Domain code says what it is doing and how far it got::

    with progress("downloading Pong/5", total=24, unit="files") as bar:
        for ...:
            bar.update(1)

By default that becomes a log line (INFO) at most every ``LOG_EVERY_S`` seconds and one at the
end, which Dagster captures into the run's logs. A front end installs its own display with
:func:`set_display` (the ``warehouse`` command line: a bar that redraws in place on a
terminal).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Protocol

log = logging.getLogger(__name__)
LOG_EVERY_S = 10.0


class Bar(Protocol):
    def update(self, n: int = 1) -> None: ...

    def close(self) -> None: ...


class LogBar:
    """Periodic log lines: ``desc: 12/24 files (3.1/s)``."""

    def __init__(self, desc: str, total: int | None, unit: str) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.done = 0
        self.started = self.last = time.monotonic()

    def _line(self) -> str:
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.desc}: {self.done}{of} {self.unit} ({rate:,.1f}/s)"

    def update(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self.last >= LOG_EVERY_S:
            self.last = time.monotonic()
            log.info(self._line())

    def close(self) -> None:
        if time.monotonic() - self.started >= LOG_EVERY_S:
            log.info(self._line())


_display: Callable[[str, int | None, str], Bar] = LogBar


def set_display(display: Callable[[str, int | None, str], Bar]) -> Callable:
    """Use ``display(desc, total, unit)`` for every progress from now on; returns the previous."""
    global _display
    previous, _display = _display, display
    return previous


@contextlib.contextmanager
def progress(desc: str, total: int | None = None, unit: str = "it") -> Iterator[Bar]:
    """A progress display for one piece of long work."""
    bar = _display(desc, total, unit)
    try:
        yield bar
    finally:
        bar.close()
