"""Memory for the batches this process reads, reused once nothing holds the batch it held.

A batch read in the trainer's process (a replay buffer's sample, a stream without workers) is
written into new memory, and new memory costs more than the writing: every 4 KiB page faults
in on first touch. Measured here, 114 MB of Atari frames decoded into fresh memory took 186 ms
and into memory touched before 87 ms; a copy of them 70 ms against ~15 ms. So blocks are kept
and handed out again, as DataLoader workers keep their shared-memory slots
(:mod:`episode_warehouse.batches.slots`).

How a block comes back: the block itself is a numpy array kept here; a batch gets a view of it
(a new array object) made into a tensor with ``torch.from_numpy``, which holds that view for as
long as any tensor over its memory lives (every leaf of the batch, every view or ``.numpy()`` of
a leaf). A weak reference to the view says when the last of them is gone; only then is the
block handed out again. A batch that is still held is never written into: holding many batches
costs new memory, never correctness. At most :data:`KEPT` blocks are kept a process; a request
when none is free (or larger than any kept one) gets new memory, kept in place of the smallest
block when all are in use no longer. Kept blocks stay until :func:`release` (a replay buffer
of 256 slices of 64 Atari steps keeps two or three of ~230 MB while it samples).
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np
import torch

KEPT = 4  # blocks a process keeps: a batch the trainer holds, one being read, two spare


class _Block:
    def __init__(self, nbytes: int) -> None:
        self.memory = np.empty(nbytes, dtype=np.uint8)
        self.lent: weakref.ref | None = None  # the view last handed out

    @property
    def free(self) -> bool:
        return self.lent is None or self.lent() is None


_blocks: list[_Block] = []
_lock = threading.Lock()


def _forget_inherited() -> None:
    """A forked child starts with none: the parent's blocks would be copied on first write,
    page by page, and its lock may have been held at the fork."""
    global _lock
    _blocks.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_inherited)


def take(nbytes: int) -> torch.Tensor:
    """``nbytes`` of uint8 memory (contents undefined), reused from a batch that is gone
    where one is free and large enough, else new."""
    with _lock:
        free = [b for b in _blocks if b.free and len(b.memory) >= nbytes]
        if free:
            block = min(free, key=lambda b: len(b.memory))
        else:
            block = _Block(nbytes)
            idle = [b for b in _blocks if b.free]
            if len(_blocks) < KEPT:
                _blocks.append(block)
            elif idle:  # too small for this batch: the new block takes its place
                _blocks[_blocks.index(min(idle, key=lambda b: len(b.memory)))] = block
            else:
                return torch.empty(nbytes, dtype=torch.uint8)  # all in use: not kept
        view = block.memory[:nbytes]
        block.lent = weakref.ref(view)
        return torch.from_numpy(view)


def release() -> int:
    """Drop every block no batch holds (memory a process that is done reading can give back);
    returns the bytes dropped."""
    with _lock:
        idle = [b for b in _blocks if b.free]
        for block in idle:
            _blocks.remove(block)
        return sum(len(b.memory) for b in idle)


def kept_bytes() -> int:
    """Bytes of the blocks this process keeps."""
    with _lock:
        return sum(len(b.memory) for b in _blocks)
