"""A batch's leaves and the memory they are views of: :class:`Buffer` says what a leaf needs,
:func:`placed` lays a batch's buffers out in one block (every leaf on a cache line),
:func:`fresh` takes that block from this process's reused memory (:mod:`~episode_warehouse.
batches.reuse`), :func:`view_of` makes a leaf of it. Channels-last cameras and ``("next",
camera)`` as a view of the camera's rows shifted by one are laid out here (docs/read-path.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from episode_warehouse.batches import reuse

Key = tuple[str, ...]
ALIGN = 64  # bytes: every leaf starts on a cache line (and on its dtype's alignment)


@dataclass(frozen=True)
class Buffer:
    """A leaf of a batch, ``shape`` ``(B, L, *row)``, and the memory it is a view of: its own
    (``owner`` None), or ``owner``'s, whose ``rows`` rows an item hold it from row ``skip``."""

    key: Key
    shape: tuple[int, ...]
    dtype: torch.dtype
    channels_last: bool = False
    rows: int = 0  # rows an item allocated (0: the leaf's own L)
    skip: int = 0
    owner: Key | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the memory this buffer allocates (0 for a view of another's)."""
        if self.owner is not None:
            return 0
        count = math.prod(self.shape)  # (math.prod, itemsize: a batch plans its buffers
        if self.rows:  # anew, and numpy's prod cost 4 us a call)
            count = count // self.shape[1] * self.rows
        return count * self.dtype.itemsize


def view_of(memory: torch.Tensor, buffer: Buffer) -> torch.Tensor:
    """``buffer``'s leaf over ``memory`` (uint8, the owner's bytes)."""
    typed = memory.view(buffer.dtype)
    shape = buffer.shape
    stored = (*shape[:-3], shape[-2], shape[-1], shape[-3]) if buffer.channels_last else shape
    if buffer.rows:
        items, length = stored[0], stored[1]
        whole = typed[: items * buffer.rows * math.prod(stored[2:])]
        tensor = whole.view(items, buffer.rows, *stored[2:])[:, buffer.skip : buffer.skip + length]
    else:
        tensor = typed[: math.prod(stored)].view(stored)
    if buffer.channels_last:
        n = len(shape) - 3
        tensor = tensor.permute(*range(n), n + 2, n, n + 1)
    return tensor


def placed(buffers: list[Buffer]) -> tuple[dict[Key, tuple[int, int]], int]:
    """Where each owner buffer's bytes go in one memory, one after another, each starting on
    a cache line: ``(offset, nbytes)`` by key, and the memory's size."""
    at: dict[Key, tuple[int, int]] = {}
    offset = 0
    for b in buffers:
        if b.owner is None:
            at[b.key] = (offset, b.nbytes)
            offset += -(-b.nbytes // ALIGN) * ALIGN
    return at, offset


def fresh(buffers: list[Buffer]) -> dict[Key, torch.Tensor]:
    """Memory for ``buffers`` outside a DataLoader worker (bytes by owner key): one block of
    this process's reused memory (:mod:`episode_warehouse.batches.reuse`), laid out by
    :func:`placed`."""
    at, size = placed(buffers)
    block = reuse.take(size)
    return {key: block[start : start + nbytes] for key, (start, nbytes) in at.items()}
