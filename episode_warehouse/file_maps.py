"""Read a file through a private memory map that keeps no file descriptor open.

``np.load(mmap_mode=...)`` and ``np.memmap`` map through Python's ``mmap.mmap``, which keeps a
duplicate of the file's descriptor for as long as the map lives: a reader of a TED holds one
descriptor per array it has touched (23 for a DROID range), so a DataLoader worker over
DROID's 64 ranges holds ~1,500 and meets the default limit of 1,024 open files. These maps are
made by torch (``torch.from_file``, ``MAP_PRIVATE``), which closes the descriptor once the file
is mapped: a worker's open files no longer grow with the ranges it reads, and pages are read
lazily as before. Private maps are copy-on-write: a write never reaches the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.npy import read_header

if TYPE_CHECKING:
    import torch


def map_bytes(path: Path, size: int | None = None) -> np.ndarray:
    """The first ``size`` bytes of ``path`` (default: all), mapped read-only, as uint8."""
    import torch  # here, not at the top: the code location imports this module, not torch

    size = os.path.getsize(path) if size is None else size
    if size == 0:
        return np.zeros(0, np.uint8)
    data = torch.from_file(str(path), shared=False, size=size, dtype=torch.uint8).numpy()
    data.flags.writeable = False
    return data


def map_npy(path: Path, fix: str) -> torch.Tensor:
    """The array of the ``.npy`` file ``path``, mapped (writes stay private to the process).

    Raises:
        CorruptInputError: not a ``.npy`` file of a C-ordered array of a dtype torch holds,
            or shorter than its header declares (``fix`` says how to rebuild it).
    """
    import torch  # here, not at the top: the code location imports this module, not torch

    try:
        with open(path, "rb") as fh:
            header = read_header(fh, subject=str(path), fix=fix,
                                 file_bytes=os.fstat(fh.fileno()).st_size)  # fmt: skip
    except OSError as exc:
        raise CorruptInputError(
            f"a TED array cannot be read ({exc})", subject=str(path), fix=fix
        ) from exc
    try:
        kind = torch.from_numpy(np.empty(0, header.dtype)).dtype
    except TypeError as exc:  # a dtype torch has no type for (uint32 on older torch, str)
        raise CorruptInputError(
            f"a TED array of {header.dtype} cannot be mapped ({exc})", subject=str(path), fix=fix
        ) from None
    shape, offset, nbytes = header.shape, header.offset, header.nbytes
    if nbytes == 0:
        return torch.empty(shape, dtype=kind)
    raw = torch.from_file(str(path), shared=False, size=offset + nbytes, dtype=torch.uint8)
    try:
        return raw[offset:].view(kind).reshape(shape)
    except RuntimeError as exc:  # a header whose length leaves the data misaligned
        raise CorruptInputError(
            f"a TED array cannot be mapped ({exc})", subject=str(path), fix=fix
        ) from exc
