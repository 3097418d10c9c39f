"""("next", observation) without a second copy: a shifted view that reads zeros at episode ends.

``NextObservation`` wraps rows [1, N] of the observation file (a zero-copy view). Indexing it
returns a plain tensor in which the rows of each episode's last step are zeros, as TED asks
("next" of a last step has no frame in the data). Shape, dtype and device queries pass through;
any other operation first materializes the corrected tensor, so results are always correct.
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


class NextObservation(torch.Tensor):
    """Rows [1, N] of an observation tensor; rows where ``last_step`` is True read as zeros."""

    _last_step: torch.Tensor

    @staticmethod
    def __new__(cls, shifted: torch.Tensor, last_step: torch.Tensor) -> NextObservation:
        out = torch.Tensor._make_subclass(cls, shifted)
        out._last_step = last_step
        return out

    def corrected(self, index=slice(None)) -> torch.Tensor:
        """``self[index]`` as a plain tensor with episode-end rows zeroed."""
        with torch._C.DisableTorchFunctionSubclass():
            out = torch.Tensor.__getitem__(self, index)
            first = index[0] if isinstance(index, tuple) and index else index
            if first is Ellipsis or first is None:
                full = torch.Tensor.clone(torch.Tensor.__getitem__(self, slice(None)))
                full[self._last_step] = 0
                return torch.Tensor.__getitem__(full, index)
            mask = self._last_step[first]
            shares_memory = out.untyped_storage().data_ptr() == self.untyped_storage().data_ptr()
            if mask.ndim == 0:
                if bool(mask):
                    return torch.zeros_like(out)
                return torch.Tensor.clone(out) if shares_memory else out
            if bool(mask.any()):
                if shares_memory:  # a view of the file (basic slicing): copy before zeroing
                    out = torch.Tensor.clone(out)
                out[mask] = 0  # advanced indexing already returned a fresh copy
            return out

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.corrected(),))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.__getitem__ and isinstance(args[0], NextObservation):
            return args[0].corrected(args[1])
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        if func in _PASS_THROUGH_FUNCS or (
            name == "__get__" and getattr(owner, "__name__", "") in _PASS_THROUGH_ATTRS
        ):
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        args = tuple(a.corrected() if isinstance(a, NextObservation) else a for a in args)
        kwargs = {
            k: v.corrected() if isinstance(v, NextObservation) else v for k, v in kwargs.items()
        }
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def _rebuild(tensor: torch.Tensor) -> torch.Tensor:
    return tensor
