"""TED (TorchRL Episode Data format) memmaps: build them from decoded episodes, open them.

Layout of a TED folder (``<root>/ted/<source>/<partition>/``)::

    meta.json              # written last: rows, episodes, and how each TED key is stored
    episodes.parquet       # one row per episode (start, length, flags, ...)
    <key>.npy              # root keys; observation files hold rows+1 rows (last one zeros)
    next/<key>.npy         # done, terminated, truncated, reward

Observations are stored once: ("next", key) is the same file shifted by one row, with the last
step of every episode reading zeros (see ``next_view.py``).
"""

from episode_warehouse.ted.builder import build_ted
from episode_warehouse.ted.reader import open_ted, open_ted_folder

__all__ = ["build_ted", "open_ted", "open_ted_folder"]
