"""A whole batch of VLADataset items read at once: the same values as ``ted_collate`` of the
items read one by one (``VLADataset.item``), computed per dataset of the mix with one gather
of each array, one normalization and one resize of each view for all its items, and written
into the batch's memory (in a DataLoader worker, a shared-memory slot: nothing is stacked or
pickled). ``VLADataset(..., batch_size=B)`` yields these batches.

Profiled on ``bench.vla_mixture``'s four datasets (one process, batches of 64): item by item,
25% of the time went to resizing, the rest to building and stacking one TensorDict an item
(setting ~14 leaves each, 0.28 s of 2.36 s stacking them) and per-item NumPy; read at once,
the resize is most of what is left (docs/standardized.md).
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import NonTensorData, TensorDict

from episode_warehouse.batches.buffers import Buffer, fresh, view_of
from episode_warehouse.batches.slots import fill_batch
from episode_warehouse.standardized.images import resize

Key = tuple[str, ...]


def _rows_of(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` for any shape of ``rows``, each distinct row read once, in order."""
    unique, inverse = np.unique(rows, return_inverse=True)
    return np.asarray(array[unique])[inverse.reshape(rows.shape)]


def _buffers(ds, n: int) -> list[Buffer]:
    w, k, a, s = ds.window, ds.chunk, ds.action_dim, ds.state_dim
    out = [
        Buffer(("action",), (n, w, a), torch.float32),
        Buffer(("vla_action", "chunk"), (n, w, k, a), torch.float32),
        Buffer(("action_is_pad",), (n, w, k), torch.bool),
        Buffer(("action_dim_is_pad",), (n, a), torch.bool),
        Buffer(("observation", "state"), (n, w, s), torch.float32),
        Buffer(("observation", "pad_mask_dict", "state"), (n, w), torch.bool),
        Buffer(("observation", "timestep_is_pad"), (n, w), torch.bool),
    ]
    for view in ds.views:
        out.append(Buffer(("observation", "pad_mask_dict", view), (n, w), torch.bool))
        if view in ds.image_sizes:
            height, width = ds.image_sizes[view]
            out.append(Buffer(("observation", "image", view), (n, w, 3, height, width),
                              torch.uint8, channels_last=True))  # fmt: skip
    return out


def _fill_part(ds, part, rows: np.ndarray, leaves: dict[Key, torch.Tensor], at: torch.Tensor):
    """The items of ``rows`` (standardized rows of ``part``) into ``leaves`` at places ``at``,
    as ``VLADataset.item`` computes each (see its module's docstring for the fields)."""

    opened, n = part.opened, len(rows)
    start, end = part.starts[rows][:, None], part.ends[rows][:, None]
    history = rows[:, None] + np.arange(1 - ds.window, 1)[None, :]
    timestep_pad = history < start
    history = np.maximum(history, start)
    future = history[:, :, None] + np.arange(ds.chunk)
    action_pad = future > end[:, :, None]
    future = np.minimum(future, end[:, :, None])
    actions = opened.array("action")
    pad = ds._pad

    def put(key: Key, values) -> None:
        leaf = leaves[key]
        leaf[at] = torch.as_tensor(values, dtype=leaf.dtype)

    put(("action",), pad(_rows_of(actions, history), ds.action_dim))
    put(("vla_action", "chunk"), pad(part.action(_rows_of(actions, future)), ds.action_dim))
    put(("action_is_pad",), action_pad)
    put(("action_dim_is_pad",), torch.arange(ds.action_dim) >= opened.meta.action_dim)
    if part.state is not None:
        state = part.state(_rows_of(opened.array("state"), history))
    else:
        state = np.zeros((n, ds.window, 0), np.float32)
    put(("observation", "state"), pad(state, ds.state_dim))
    put(("observation", "pad_mask_dict", "state"), part.state is not None)
    put(("observation", "timestep_is_pad"), timestep_pad)
    ted_rows = _rows_of(opened.array("ted_row"), history).reshape(-1)
    for view in ds.views:
        size = ds.image_sizes.get(view)
        frames = opened.frames(view)
        present = frames is not None and size is not None
        put(("observation", "pad_mask_dict", view), present)
        if present:
            leaf = leaves[("observation", "image", view)]
            if not _read_native(frames, ted_rows, leaf, at):
                _resize_into(leaf, at, _pixels(frames, ted_rows), size)
        elif size is not None:
            put(("observation", "image", view), 0)


def _read_native(frames, rows: np.ndarray, leaf: torch.Tensor, at: torch.Tensor) -> bool:
    """A view delivered at its stored size (RGB, uint8): its frames of TED rows ``rows``
    (``window`` per item) read, encoded ones decoded, straight into the batch's memory at the
    items' places ``at``: no copy, no resize. False where the view needs a resize (or a grey
    camera its three channels): the caller's resize path."""
    if tuple(frames.row_shape) != tuple(leaf.shape[2:]) or np.dtype(frames.dtype) != np.uint8:
        return False
    window = leaf.shape[1]
    flat = leaf.view(-1, *leaf.shape[2:]).numpy()  # items x window frames, channels last
    places = (at.numpy()[:, None] * window + np.arange(window)).reshape(-1)
    frames.read_into(rows, flat, places)
    return True


def _resize_into(leaf: torch.Tensor, at: torch.Tensor, pixels: np.ndarray, size) -> None:
    """``pixels`` (``len(at)`` items of ``window`` frames each) resized into ``leaf`` at places
    ``at``: straight into the leaf's memory where the places follow each other (a batch of one
    dataset), else each item's frames copied to its place."""
    first = int(at[0]) if len(at) else 0
    if len(at) and bool((at == torch.arange(first, first + len(at))).all()):
        target = leaf[first : first + len(at)]
        resize(pixels, size, out=target.view(-1, *target.shape[2:]))
        return
    image = resize(pixels, size, contiguous=False)
    window = leaf.shape[1]
    for j, place in enumerate(at.tolist()):  # channels-last into channels-last: a plain copy
        leaf[place].copy_(image[j * window : (j + 1) * window])


def _pixels(frames, rows: np.ndarray) -> np.ndarray:
    """A view's frames of TED rows ``rows`` read straight into this process's reused memory
    (:func:`~episode_warehouse.batches.buffers.fresh`; encoded ones decoded there, channels
    last, as ``resize`` takes them), so no frame and no batch of frames allocates memory of its
    own (allocations of a size that changes from batch to batch grew the workers' heaps:
    docs/standardized.md)."""
    shape = frames.row_shape
    dtype = torch.from_numpy(np.zeros(0, frames.dtype)).dtype
    buffer = Buffer(("frames",), (len(rows), *shape), dtype, frames.pixels_last)
    target = view_of(fresh([buffer])[buffer.key], buffer).numpy()
    frames.read_into(rows, target)
    return target


def read_items(ds, draws: list[tuple[int, int]]) -> TensorDict:
    """The batch of ``draws`` (``(part, standardized row)`` each, as ``VLADataset.draw``
    gives them), equal to ``ted_collate([ds.item(p, r) for p, r in draws])``."""
    n = len(draws)
    part_of = np.array([p for p, _ in draws], dtype=np.int64)
    row_of = np.array([r for _, r in draws], dtype=np.int64)
    buffers = _buffers(ds, n)

    def fill(memory: dict) -> TensorDict:
        leaves = {b.key: view_of(memory[b.key], b) for b in buffers}
        texts, names = [""] * n, [""] * n
        for p in np.unique(part_of).tolist():
            part, places = ds.parts[p], np.flatnonzero(part_of == p)
            _fill_part(ds, part, row_of[places], leaves, torch.from_numpy(places))
            said = part.opened.instructions[_rows_of(part.opened.array("instruction"),
                                                     row_of[places])]  # fmt: skip
            for place, text in zip(places.tolist(), said, strict=True):
                texts[place], names[place] = str(text), part.name
        out = TensorDict(batch_size=[n])
        for key, value in leaves.items():
            out.set(key, value)
        for name, values in (("language_instruction", texts), ("dataset_name", names)):
            made = {v: NonTensorData(v) for v in set(values)}  # one a distinct string, shared
            out.set(name, torch.stack([made[v] for v in values]))
        return out

    return fill_batch(buffers, fill)
