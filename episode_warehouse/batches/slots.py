"""Batches that DataLoader workers stack into reused shared memory.

A worker's batch reaches the main process through shared memory. Left to torch, every batch
gets a fresh segment: the worker allocates it, page-faults every page of it in and copies the
batch there (a 14 MB batch of Atari slices: ~30 ms of faults against ~2 ms of copying), and the
segment is freed when the trainer drops the batch. Here each worker keeps a few segments
(*slots*) and stacks each batch straight into a free one; the main process maps the slot, and
when the last tensor of that batch is gone there it marks the slot free again, so the worker's
next batch reuses its pages.

How a slot comes back: each worker has one small shared array of flags (1 = the main process
may still hold the batch). The batch travels as one TensorDict whose pickling is ours (see
:func:`_reduce`): the first batch of a slot carries the slot and the flags themselves (a file
descriptor each, passed over a socket, and a new mapping in the main process), every later one
only the slot's name and the leaves' layout, because the main process keeps each slot mapped
(:data:`_mapped`) as long as its worker lives. Passing the descriptors again for every batch
cost the trainer's process a fifth of a core at 100 batches/s (measured, docs/read-path.md).
There the leaves are views of a new array over the slot's mapping (``torch.from_numpy``), which
lives as long as any tensor of the batch; a weak reference to that array says when the batch is
gone. Whenever a batch arrives, every slot whose batch has died since is flagged free. A worker
with no free slot
allocates one more (at most :data:`MAX_SLOTS`), then falls back to torch's own path, so holding
many batches costs speed, never correctness. A slot batch changed in the worker after stacking
(a collate that wraps ``ted_collate``) is sent as a copy and its slot reused at once.

What a user must know: a batch from a worker lives in that worker's slot until the main process
drops it; to keep part of it beyond that, or to hand it to another process, ``clone()`` it.
Memory: a worker keeps up to :data:`MAX_SLOTS` slots in ``/dev/shm``, each a batch rounded up to
a MiB (in steady state about ``prefetch_factor + 2`` of them: the batches waiting, the one the
trainer holds, and one not yet seen free); when ``/dev/shm`` has no room for another, the
worker warns once and sends its batches torch's way.

torch's and tensordict's own reductions stay in charge of everything else: ours is registered
for ``TensorDict`` in the worker only (through ``ForkingPickler``'s table of reducers, the one
private name used here), and hands a copy of any TensorDict that is not an untouched slot batch
to the reduction it replaced.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase, is_non_tensor
from torch.utils.data import get_worker_info

from episode_warehouse.batches.buffers import ALIGN, Buffer, fresh, placed, view_of
from episode_warehouse.errors import ConfigError

log = logging.getLogger(__name__)
MAX_SLOTS = 8  # per worker: batches in flight (prefetch) + held by the trainer + one late
SLOT_ROUNDING = 1 << 20  # slots are allocated in whole MiB, so batch sizes can vary a little


def _leaf_or_text(cls: type) -> bool:
    """``is_leaf`` for ``keys()``: tensors and non-tensor entries (strings) are leaves."""
    return issubclass(cls, (NonTensorData, NonTensorStack)) or not issubclass(cls, TensorDictBase)


def non_tensor_keys(td: TensorDictBase) -> list[tuple[str, ...]]:
    """The keys of ``td``'s non-tensor entries (strings such as an instruction), nested too:
    ``keys(True, True)`` leaves them out, so a batch built from it alone would drop them."""
    keys = td.keys(True, True, is_leaf=_leaf_or_text)
    return [k if isinstance(k, tuple) else (k,) for k in keys if is_non_tensor(td.get(k))]


@dataclass(frozen=True)
class Leaf:
    key: tuple[str, ...]
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    channels_last: bool = False  # (..., C, H, W) held as (..., H, W, C), as decoders give pixels
    rows: int = 0  # a view of rows [skip, skip + L) of rows allocated an item (the memory of
    skip: int = 0  # the leaf at the same offset: a camera and its ("next", camera))


def channels_last(value: torch.Tensor) -> bool:
    """Whether ``value``'s last three dims (C, H, W) are held as (H, W, C) pixels (a camera
    decoded from JPEG or PNG): stacked so, nothing is transposed."""
    if value.ndim < 3 or value.shape[-3] == 1:
        return False
    c, h, w = value.shape[-3:]
    return value.stride()[-3:] == (1, w * c, c)


def _layout(items: list[TensorDictBase]) -> tuple[list[Leaf], int] | None:
    """Where each stacked leaf goes in a slot, or None when the items are not equal-shaped
    plain tensors (torch.stack then gives the error or the result)."""
    first = items[0]
    keys = [k if isinstance(k, tuple) else (k,) for k in first.keys(True, True)]
    leaves, offset = [], 0
    for key in keys:
        value = first.get(key)
        if type(value) is not torch.Tensor or value.device.type != "cpu":
            return None
        for item in items[1:]:
            other = item.get(key, None)
            if type(other) is not torch.Tensor or other.shape != value.shape:
                return None
            if other.dtype != value.dtype:
                return None
        nbytes = len(items) * value.numel() * value.element_size()
        shape = (len(items), *value.shape)
        leaves.append(Leaf(key, value.dtype, shape, offset, nbytes, channels_last(value)))
        offset += -(-nbytes // ALIGN) * ALIGN
    if any(len(item.keys(True, True)) != len(keys) for item in items[1:]):
        return None
    return leaves, offset


def plan(buffers: list[Buffer]) -> list[Leaf]:
    """Where each of ``buffers`` goes in a slot, one after another (a view of another's memory
    at that one's place)."""
    leaves: list[Leaf] = []
    at, _ = placed(buffers)
    for b in buffers:
        start, nbytes = at[b.owner or b.key]
        leaves.append(Leaf(b.key, b.dtype, b.shape, start, nbytes, b.channels_last, b.rows,
                           b.skip))  # fmt: skip
    return leaves


def _views(data: torch.Tensor, leaves: list[Leaf]) -> list[torch.Tensor]:
    return [_view(data[leaf.offset : leaf.offset + leaf.nbytes], leaf) for leaf in leaves]


def _view(memory: torch.Tensor, leaf: Leaf) -> torch.Tensor:
    return view_of(memory, Buffer(leaf.key, leaf.shape, leaf.dtype, leaf.channels_last,
                                  leaf.rows, leaf.skip))  # fmt: skip


class _Pool:
    """One worker process's slots and the flags the main process clears."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.name = f"{self.pid}-{os.urandom(8).hex()}"  # unique in the main process's table
        sweep_dead_segments()
        self.flags = torch.zeros(MAX_SLOTS, dtype=torch.uint8).share_memory_()
        # read and set through numpy: a torch index and its bool took ~5 us a slot, every batch
        self.held = self.flags.numpy()
        self.slots: list[torch.Tensor | None] = [None] * MAX_SLOTS
        self.generation = [0] * MAX_SLOTS  # a slot allocated again is a new one for the main
        self.mapped = [False] * MAX_SLOTS  # whether the main process maps this generation
        # per slot: the layout last filled and its views, which a batch is checked against
        # when it leaves (never handed out: a batch's own leaves are made by its fill)
        self.checks: list[tuple[tuple[Leaf, ...], list[torch.Tensor]] | None] = [None] * MAX_SLOTS
        self.warned = False

    def check_views(self, i: int, leaves: list[Leaf]) -> list[torch.Tensor]:
        """The views of slot ``i`` that ``leaves`` lay out (made once while both stay)."""
        kept, layout = self.checks[i], tuple(leaves)
        if kept is None or kept[0] != layout:
            kept = self.checks[i] = (layout, _views(self.slots[i], leaves))  # type: ignore[arg-type]
        return kept[1]

    def take(self, nbytes: int) -> int | None:
        """A free slot of at least ``nbytes`` (allocated or grown if need be), or None."""
        free = np.flatnonzero(self.held == 0).tolist()
        for i in free:
            slot = self.slots[i]
            if slot is not None and slot.numel() >= nbytes:
                return i
        if not free:
            return None
        i = next((i for i in free if self.slots[i] is None), free[0])
        size = -(-nbytes // SLOT_ROUNDING) * SLOT_ROUNDING
        self.slots[i] = None
        self.generation[i] += 1
        self.mapped[i] = False
        self.checks[i] = None
        try:
            self.slots[i] = torch.empty(size, dtype=torch.uint8).share_memory_()
        except RuntimeError as exc:  # /dev/shm full (containers give it 64 MiB)
            if not self.warned:
                log.warning(
                    "no shared memory for another %d MiB batch slot (%s): this worker's batches "
                    "take torch's own path; give /dev/shm more room (docker run --shm-size)",
                    size >> 20, exc,
                )  # fmt: skip
                self.warned = True
            return None
        return i


SHM = "/dev/shm"


def sweep_dead_segments(folder: str = SHM) -> int:
    """Under torch's ``file_system`` sharing strategy, remove the shared-memory files of
    processes that are gone (``torch_<pid>_<random>_<n>``, the names torch gives them): a job
    killed whole (SIGKILL) leaves its workers' slots there, workers x slots x a batch each, and
    nothing else would remove them. Called when a worker's slots are made; the number removed.
    Under ``file_descriptor`` (Linux's default) segments have no name and die with their
    processes: nothing to do."""
    if torch.multiprocessing.get_sharing_strategy() != "file_system" or not os.path.isdir(folder):
        return 0
    removed = 0
    for name in os.listdir(folder):
        parts = name.split("_")
        if len(parts) != 4 or parts[0] != "torch" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, another user's
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            continue
    if removed:
        log.info("removed %d shared-memory segments of processes that are gone", removed)
    return removed


_pool: _Pool | None = None
_Extras = dict[tuple[str, ...], TensorDictBase]  # a batch's stacked non-tensor entries
_sent: dict[int, tuple[weakref.ref[TensorDict], int, list[Leaf], list[torch.Tensor], _Extras]] = {}
_previous_reduce = None


def take_over_pickling() -> None:
    """Make TensorDicts leave this (worker) process through :func:`_reduce` (idempotent)."""
    global _previous_reduce
    if _previous_reduce is None:
        reducers = getattr(ForkingPickler, "_extra_reducers", {})
        _previous_reduce = reducers.get(TensorDict, _plain_reduce)
        ForkingPickler.register(TensorDict, _reduce)


def _plain_reduce(td: TensorDict):
    return td.__reduce_ex__(4)


def _worker_pool() -> _Pool:
    global _pool
    take_over_pickling()
    if _pool is None or _pool.pid != os.getpid():
        _pool = _Pool()
        _sent.clear()
    return _pool


def stack_into_slot(items: list[TensorDictBase]) -> TensorDictBase | None:
    """Stack equal-shaped TensorDicts into a free slot of this worker, or None (no free slot,
    or items that are not equal-shaped tensors: the caller stacks them the usual way).

    Non-tensor entries (strings) are stacked as ``torch.stack`` stacks them and travel pickled
    beside the slot, so a worker's batch holds what the main process's batch holds."""
    found = _layout(items)
    if found is None:
        return None
    leaves, nbytes = found
    texts = non_tensor_keys(items[0])
    if any(non_tensor_keys(item) != texts for item in items[1:]):
        return None
    pool = _worker_pool()
    _forget_unsent(pool)
    i = pool.take(nbytes)
    if i is None:
        return None
    data = pool.slots[i]
    out = TensorDict(batch_size=(len(items), *items[0].batch_size))
    views = _views(data, leaves)  # type: ignore[arg-type]
    for leaf, view in zip(leaves, views, strict=True):
        values = [item.get(leaf.key) for item in items]
        if leaf.channels_last:  # torch.stack(out=) into a channels-last view took 36x as
            for k, value in enumerate(values):  # long as a copy_ per item (63 MB of pixels)
                view[k].copy_(value)
        else:
            torch.stack(values, out=view)
        out.set(leaf.key, view)
    extras = {name: torch.stack([item.get(name) for item in items]) for name in texts}
    for name, value in extras.items():
        out.set(name, value)
    pool.held[i] = 1
    _sent[id(out)] = (weakref.ref(out), i, leaves, views, extras)
    return out


def fill_slot(buffers: list[Buffer], fill) -> TensorDictBase | None:
    """A batch of ``buffers`` written into a free slot of this worker by ``fill(memory)``
    (each owner buffer's bytes by key; it returns the batch's TensorDict, whose leaves are
    :func:`~episode_warehouse.ted.gather.view_of` them, and may hold non-tensor entries that
    travel pickled beside the slot), or None when no slot is free (the caller then fills
    fresh memory)."""
    leaves = plan(buffers)
    pool = _worker_pool()
    _forget_unsent(pool)
    i = pool.take(max((leaf.offset + leaf.nbytes for leaf in leaves), default=0))
    if i is None:
        return None
    data = pool.slots[i]
    memory = {b.key: data[leaf.offset : leaf.offset + leaf.nbytes]  # type: ignore[index]
              for b, leaf in zip(buffers, leaves, strict=True) if b.owner is None}  # fmt: skip
    out = fill(memory)
    extras = {name: out.get(name) for name in non_tensor_keys(out)}  # strings travel pickled
    pool.held[i] = 1
    _sent[id(out)] = (weakref.ref(out), i, leaves, pool.check_views(i, leaves), extras)
    return out


def fill_batch(buffers: list[Buffer], fill) -> TensorDictBase:
    """A batch of ``buffers`` written by ``fill(memory)`` (see :func:`fill_slot`): into a
    shared-memory slot in a DataLoader worker where one is free, else into fresh memory."""
    if get_worker_info() is not None:
        batch = fill_slot(buffers, fill)
        if batch is not None:
            return batch
    return fill(fresh(buffers))


def _forget_unsent(pool: _Pool) -> None:
    for key, (ref, unsent, *_) in list(_sent.items()):
        if ref() is None:  # made but never sent (a collate dropped it): the slot is free
            del _sent[key]
            pool.held[unsent] = 0


def _untouched(
    td: TensorDict, leaves: list[Leaf], views: list[torch.Tensor], extras: _Extras
) -> bool:
    """Whether ``td`` holds exactly the slot's views (same memory, shape, dtype and strides)
    and the non-tensor entries it was filled with: one walk over its leaves."""
    expected = {leaf.key: view for leaf, view in zip(leaves, views, strict=True)}
    seen = texts = 0
    for name in td.keys(True, True, is_leaf=_leaf_or_text):
        key = name if isinstance(name, tuple) else (name,)
        value = td.get(key)
        if key in extras:
            if value is not extras[key]:
                return False
            texts += 1
            continue
        view = expected.get(key)
        if view is None or not isinstance(value, torch.Tensor):
            return False
        if value.data_ptr() != view.data_ptr() or value.dtype != view.dtype:
            return False
        if value.shape != view.shape or value.stride() != view.stride():
            return False
        seen += 1
    return seen == len(expected) and texts == len(extras)


def _reduce(td: TensorDict):
    """ForkingPickler reduction of TensorDict in a worker: a slot batch travels as its slot;
    any other TensorDict as a copy, by the reduction this one replaced.

    The copy matters: torch pickles a tensor by moving its storage into shared memory in
    place, and the storage of a slice read from a TED is the whole memory-mapped file (or a
    fetched episode) that the worker goes on reading; moved under the next read, it crashed
    the worker. Copying here, when a slice itself is sent (``batch_size=None``), spares the
    copy when slices are only stacked into a batch in the worker.
    """
    entry = _sent.pop(id(td), None)
    if entry is not None and id(entry[0]()) == id(td) and _pool is not None:  # (not a reused id)
        _, i, leaves, views, extras = entry
        if _untouched(td, leaves, views, extras) and td.batch_size[0] == leaves[0].shape[0]:
            pool, slot = _pool, _SlotName(_pool.name, _pool.pid, i, _pool.generation[i])
            memory = None if pool.mapped[i] else (pool.slots[i], pool.flags)
            pool.mapped[i] = True  # this message maps it: the main process reads them in order
            return _rebuild, (slot, memory, leaves, tuple(td.batch_size), extras)
        copy = td.clone()  # changed in the worker after stacking: send a copy, keep the slot
        _pool.held[i] = 0
    else:
        copy = td.clone()
    return _previous_reduce(copy)  # type: ignore[misc]


# main process side: each worker's slots, mapped once; the batches it holds
@dataclass(frozen=True)
class _SlotName:
    pool: str  # the worker's pool (its pid and a random part: pids are reused)
    pid: int
    index: int
    generation: int


@dataclass
class _Mapped:
    pid: int  # the worker's
    generation: int
    memory: np.ndarray  # the slot's bytes, mapped here (its base holds the mapping)
    flags: np.ndarray  # the worker's flags (a numpy view: set every batch)


_mapped: dict[tuple[str, int], _Mapped] = {}
_held: list[tuple[weakref.ref[np.ndarray], np.ndarray, int]] = []
_held_lock = threading.Lock()  # torch's pin-memory thread unpickles too


def _forget_inherited() -> None:
    """A forked child (a DataLoader worker) holds none of its parent's slots."""
    global _held_lock
    _mapped.clear()
    _held.clear()
    _held_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_inherited)


def release_dropped() -> int:
    """Flag free every held slot whose batch the main process has dropped; how many."""
    global _held
    with _held_lock:
        keep, freed = [], 0
        for ref, flags, i in _held:
            if ref() is None:
                flags[i] = 0
                freed += 1
            else:
                keep.append((ref, flags, i))
        _held = keep
        return freed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process now has that pid
        return True
    return True


def _map(slot: _SlotName, memory: tuple[torch.Tensor, torch.Tensor] | None) -> _Mapped:
    """The slot's mapping here: kept from its first batch, which carried the slot itself.
    A new slot's first batch also drops the mappings of workers that have exited (a loader
    whose workers end each epoch would otherwise keep every epoch's slots mapped)."""
    key = (slot.pool, slot.index)
    if memory is not None:
        for other in [k for k, m in _mapped.items() if k[0] != slot.pool and not _alive(m.pid)]:
            del _mapped[other]
        data, flags = memory
        _mapped[key] = _Mapped(slot.pid, slot.generation, data.numpy(), flags.numpy())
    found = _mapped.get(key)
    if found is None or found.generation != slot.generation:
        raise ConfigError(
            f"a batch names shared-memory slot {slot.index} of DataLoader worker {slot.pid}, "
            "which this process never received: the batch was passed on from the process "
            "whose DataLoader made it",
            subject=f"a batch of DataLoader worker {slot.pid}",
            fix="clone() a worker's batch before sending it to another process",
        )
    return found


def _rebuild(
    slot: _SlotName,
    memory: tuple[torch.Tensor, torch.Tensor] | None,
    leaves: list[Leaf],
    batch_size: tuple[int, ...],
    extras: _Extras,
) -> TensorDict:
    release_dropped()
    with _held_lock:
        mapped = _map(slot, memory)
        carrier = mapped.memory[:]  # this batch's own array: it lives while any leaf does
        _held.append((weakref.ref(carrier), mapped.flags, slot.index))
    out = TensorDict(batch_size=batch_size)
    for leaf, view in zip(leaves, _views(torch.from_numpy(carrier), leaves), strict=True):
        out.set(leaf.key, view)
    for key, value in extras.items():
        out.set(key, value)
    return out
