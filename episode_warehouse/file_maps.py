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

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from episode_warehouse.errors import CorruptInputError

if TYPE_CHECKING:
    import torch

_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


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
            version = np.lib.format.read_magic(fh)
            header = _HEADERS.get(version)
            if header is None:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = header(fh)
            offset = fh.tell()
        if fortran or dtype.hasobject or not dtype.isnative:
            raise ValueError(f"a {'Fortran-ordered ' if fortran else ''}{dtype} array")
        kind = torch.from_numpy(np.empty(0, dtype)).dtype
        nbytes = math.prod(shape) * dtype.itemsize
        if os.path.getsize(path) < offset + nbytes:
            raise ValueError(f"shorter than its header's {shape} of {dtype}")
    except (OSError, ValueError, TypeError) as exc:
        raise CorruptInputError(
            f"a TED array cannot be read ({exc})", subject=str(path), fix=fix
        ) from exc
    if nbytes == 0:
        return torch.empty(shape, dtype=kind)
    raw = torch.from_file(str(path), shared=False, size=offset + nbytes, dtype=torch.uint8)
    try:
        return raw[offset:].view(kind).reshape(shape)
    except RuntimeError as exc:  # a header whose length leaves the data misaligned
        raise CorruptInputError(
            f"a TED array cannot be mapped ({exc})", subject=str(path), fix=fix
        ) from exc
