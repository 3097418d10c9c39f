"""One environment variable set for the duration of a block, then put back as it was."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def variable_set(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` inside the block; afterwards its old value, or unset."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
