"""A tensor that stands in for rows it computes when indexed: the one mechanism behind a TED's
shifted ``("next", key)`` (:class:`~episode_warehouse.ted.next_view.NextObservation`) and a
camera stored encoded (:class:`~episode_warehouse.frames.tensor.FrameTensor`).

A ``StandIn`` is a plain tensor's subclass over a placeholder of its shape and dtype (for the
shifted view, the file's rows themselves). Indexing it computes the rows it picks
(:meth:`StandIn.rows`); shape, dtype and device queries answer from the placeholder
(:meth:`StandIn.shape_only`); ``.to()`` to the same device and dtype and ``.cpu()`` on the CPU
return it as it is; any other operation gets the whole computed tensor first
(:meth:`StandIn.whole`): right, never free. Only public torch API is used
(``Tensor.as_subclass`` and ``__torch_function__``).
"""

from __future__ import annotations

import torch

_PASS_THROUGH_ATTRS = {
    "shape", "dtype", "device", "ndim", "is_nested", "is_sparse", "layout", "names",
    "requires_grad", "is_cuda", "is_meta", "is_quantized", "grad", "grad_fn", "is_leaf",
    "is_mps", "is_xpu", "is_mkldnn",
}  # fmt: skip
_PASS_THROUGH_FUNCS = {
    torch.Tensor.size, torch.Tensor.dim, torch.Tensor.numel, torch.Tensor.__len__,
    torch.Tensor.is_shared, torch.Tensor.stride, torch.Tensor.data_ptr,
    torch.Tensor.is_floating_point, torch.Tensor.is_complex, torch.Tensor.storage_offset,
    torch.Tensor.is_contiguous, torch.Tensor.element_size, torch.Tensor.untyped_storage,
    torch.Tensor.get_device, torch.Tensor.is_pinned,
}  # fmt: skip


class StandIn(torch.Tensor):
    """See the module's docstring; subclasses define the three methods."""

    def rows(self, index) -> torch.Tensor:
        """``self[index]``, computed."""
        raise NotImplementedError

    def whole(self) -> torch.Tensor:
        """Every row, computed (what a whole-tensor operation works on)."""
        raise NotImplementedError

    def shape_only(self) -> torch.Tensor:
        """A plain tensor of this shape, dtype and device (its values are not these)."""
        raise NotImplementedError

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        this = args[0] if args and isinstance(args[0], StandIn) else None
        if func is torch.Tensor.__getitem__ and this is not None:
            return this.rows(args[1])
        if func is torch.Tensor.cpu and this is not None and this.device.type == "cpu":
            return this
        if func is torch.Tensor.to and this is not None and is_noop_move(this, args[1:], kwargs):
            return this
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        if func in _PASS_THROUGH_FUNCS or (
            name == "__get__" and getattr(owner, "__name__", "") in _PASS_THROUGH_ATTRS
        ):
            return func(*_plain(args, whole=False), **kwargs)
        whole = {k: v.whole() if isinstance(v, StandIn) else v for k, v in kwargs.items()}
        return func(*_plain(args, whole=True), **whole)


def _plain(args, *, whole: bool) -> tuple:
    """Arguments with every stand-in (also inside a list or tuple, as ``torch.cat`` takes
    them) replaced by a plain tensor: its computed rows, or for shape-like queries its
    placeholder."""

    def one(a):
        if isinstance(a, StandIn):
            return a.whole() if whole else a.shape_only()
        if isinstance(a, list | tuple):
            return type(a)(one(x) for x in a)
        return a

    return tuple(one(a) for a in args)


def is_noop_move(this: torch.Tensor, args: tuple, kwargs: dict) -> bool:
    """Whether ``this.to(*args, **kwargs)`` keeps device and dtype (and asks for no copy)."""
    if kwargs.get("copy") or kwargs.get("memory_format") is not None:
        return False
    probe = torch.empty(0, dtype=this.dtype, device=this.device)
    moved = probe.to(*args, **kwargs)
    return moved.dtype == this.dtype and moved.device == this.device
