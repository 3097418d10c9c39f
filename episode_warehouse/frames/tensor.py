"""A camera of a TED as a tensor that decodes on indexing.

``FrameTensor`` stands in a TensorDict where the decoded layout has a memory-mapped uint8
tensor: it has that tensor's shape and dtype, and indexing it (``t[i]``, ``t[a:b]``,
``t[index_tensor]``, which is what ``td[...]``, TorchRL's storages and samplers and the
DataLoader datasets do) decodes the rows it picks and returns them as a plain tensor, equal to
the decoded layout's rows. It holds no pixels: its data is one zero expanded to its shape.

Any other operation on the *whole* tensor (``.float()``, ``.mean()``, ``.clone()``,
``.to("cuda")``) decodes every row first (N x frame bytes of memory), as
:class:`~episode_warehouse.ted.next_view.NextObservation` materializes its rows: results are
always right, never free. Pickled, it stays encoded (the frame file's path and offsets travel,
not pixels).
"""

from __future__ import annotations

import numpy as np
import torch

from episode_warehouse.frames.rows import FrameRows

# what a stand-in tensor (this one, NextObservation) answers from its placeholder: shape-like
# queries, never the pixels
PASS_THROUGH_ATTRS = {
    "shape", "dtype", "device", "ndim", "is_nested", "is_sparse", "layout", "names",
    "requires_grad", "is_cuda", "is_meta", "is_quantized", "grad", "grad_fn", "is_leaf",
    "is_mps", "is_xpu", "is_mkldnn",
}  # fmt: skip
PASS_THROUGH_FUNCS = {
    torch.Tensor.size, torch.Tensor.dim, torch.Tensor.numel, torch.Tensor.__len__,
    torch.Tensor.is_shared, torch.Tensor.stride, torch.Tensor.data_ptr,
    torch.Tensor.is_floating_point, torch.Tensor.is_complex, torch.Tensor.storage_offset,
    torch.Tensor.is_contiguous, torch.Tensor.element_size, torch.Tensor.untyped_storage,
    torch.Tensor.get_device, torch.Tensor.is_pinned,
}  # fmt: skip


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype


def placeholder(rows: int, row_shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A tensor of that shape and dtype that holds one element (a zero, expanded)."""
    return torch.zeros((), dtype=dtype).expand(rows, *row_shape)


class FrameTensor(torch.Tensor):
    """The decoded frames of a :class:`~episode_warehouse.frames.rows.FrameRows`, decoded when
    indexed (see the module's docstring)."""

    _frames: FrameRows
    _plain: torch.Tensor

    @staticmethod
    def __new__(cls, frames: FrameRows) -> FrameTensor:
        plain = placeholder(len(frames), frames.row_shape, _torch_dtype(frames.dtype))
        out = plain.as_subclass(cls)
        out._frames, out._plain = frames, plain
        return out

    @property
    def frames(self) -> FrameRows:
        """The encoded rows behind this tensor (their stored bytes: ``frames.blob(i)``)."""
        return self._frames

    def decoded(self, index=slice(None)) -> torch.Tensor:
        """``self[index]`` as a plain tensor: ``(C, H, W)`` rows in the decoder's memory order,
        channels last (``torch.channels_last``, as JPEG and PNG hold pixels): ``torch.stack``,
        ``.contiguous()`` and a batch's collate reorder them in the one copy they make anyway;
        ``.view()`` of the flat pixels needs ``.contiguous()`` first (``.reshape()`` does not)."""
        return torch.from_numpy(self._frames[_numpy_index(index)])

    def __reduce_ex__(self, protocol):
        return (FrameTensor, (self._frames,))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        this = args[0] if args and isinstance(args[0], FrameTensor) else None
        if func is torch.Tensor.__getitem__ and this is not None:
            return this.decoded(args[1])
        if func is torch.Tensor.cpu and this is not None:
            return this
        if func is torch.Tensor.to and this is not None and is_noop_move(this, args[1:], kwargs):
            return this
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        if func in PASS_THROUGH_FUNCS or (
            name == "__get__" and getattr(owner, "__name__", "") in PASS_THROUGH_ATTRS
        ):
            return func(*_plain(args, decoded=False), **kwargs)
        return func(*_plain(args, decoded=True), **_plain_kwargs(kwargs))


def _numpy_index(index):
    """A torch index as FrameRows takes it (tensors as numpy arrays)."""
    if isinstance(index, torch.Tensor):
        return index.cpu().numpy()
    if isinstance(index, tuple):
        return tuple(_numpy_index(i) for i in index)
    if isinstance(index, list):
        return np.asarray([i.item() if isinstance(i, torch.Tensor) else i for i in index])
    return index


def _plain(args, *, decoded: bool) -> tuple:
    def one(a):
        if isinstance(a, FrameTensor):
            return a.decoded() if decoded else a._plain
        if isinstance(a, list | tuple):
            return type(a)(one(x) for x in a)
        return a

    return tuple(one(a) for a in args)


def _plain_kwargs(kwargs: dict) -> dict:
    return {k: v.decoded() if isinstance(v, FrameTensor) else v for k, v in kwargs.items()}


def is_noop_move(this: torch.Tensor, args: tuple, kwargs: dict) -> bool:
    """Whether ``this.to(*args, **kwargs)`` keeps device and dtype (and asks for no copy)."""
    if kwargs.get("copy") or kwargs.get("memory_format") is not None:
        return False
    probe = torch.empty(0, dtype=this.dtype, device=this.device)
    moved = probe.to(*args, **kwargs)
    return moved.dtype == this.dtype and moved.device == this.device
