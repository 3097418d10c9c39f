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

__all__ = ["build_ted", "open_ted", "open_ted_folder"]


def __getattr__(name: str):
    # The reader needs torch and tensordict (seconds to import); load them only when used.
    if name in ("open_ted", "open_ted_folder"):
        from episode_warehouse.ted import open as opener

        return getattr(opener, name)
    raise AttributeError(name)
