"""("next", observation) without a second copy: a shifted view that reads the final observation,
or zeros, at episode ends.

``NextObservation`` wraps rows [1, N] of the observation file (a zero-copy view). Indexing it
returns a plain tensor in which the rows of each episode's last step hold the observation after
that step where the source recorded it (Minari's N+1th, one row per episode in
``final/<key>.npy``), else zeros, as TED asks where it is unknown (neither Atari layout logged
it, and RLDS keeps its last observation as a step of its own): ``td[i]``, ``td[a:b]``,
``td[index_tensor]``,
``torch.stack`` of such slices and ``.clone()`` of them cost only the rows they read.

Shape, dtype and device queries pass through, and ``.to()`` to the same device and dtype is a
no-op. Any other operation on the *whole* tensor (``.float()``, ``.mean()``, ``.to("cuda")``,
``.contiguous()``) first materializes the corrected tensor: N x frame bytes of memory (7 GB
for a million 84x84 frames), so results are always right but never free. Trainers read slices
and batches; for whole-tensor work, open the TED with ``next_obs="copy"`` to pay that once,
visibly, or compute on ``td["observation"]`` and shift yourself.

Only public torch API is used: the subclass keeps a plain tensor of the shifted rows
(``Tensor.as_subclass``) and computes on it, so no dispatch has to be switched off.
"""

from __future__ import annotations

import torch

from episode_warehouse.stand_in import StandIn


class NextObservation(StandIn):
    """Rows [1, N] of an observation tensor; rows where ``last_step`` is True read as the
    episode's row of ``final`` (indexed by ``episode``, the TED's episode id per step), or as
    zeros where there is no ``final``."""

    _base_rows: torch.Tensor
    _last_step: torch.Tensor
    _final: torch.Tensor | None
    _episode: torch.Tensor | None

    @staticmethod
    def __new__(
        cls,
        shifted: torch.Tensor,
        last_step: torch.Tensor,
        final: torch.Tensor | None = None,
        episode: torch.Tensor | None = None,
    ) -> NextObservation:
        # a camera stored encoded (FrameTensor) decodes when indexed: the view is made over
        # its placeholder, so nothing is decoded here
        plain = shifted.shape_only() if isinstance(shifted, StandIn) else shifted
        out = plain.as_subclass(cls)
        out._base_rows = shifted
        out._last_step = last_step
        out._final = final
        out._episode = episode
        return out

    def _fill(self, tensor: torch.Tensor, mask: torch.Tensor, index) -> None:
        """Set ``tensor``'s rows where ``mask`` (the last steps among ``base[index]``)."""
        if self._final is None or self._episode is None:
            _zero_rows(tensor, mask)
            return
        episodes = self._episode[index][mask].long()
        tensor[mask] = self._final[episodes].to(tensor.dtype)

    def corrected(self, index=slice(None)) -> torch.Tensor:
        """``self[index]`` as a plain tensor with episode-end rows filled."""
        if isinstance(index, tuple) and len(index) == 1:
            index = index[0]
        if isinstance(index, tuple) and index and index[0] is not Ellipsis and index[0] is not None:
            first, rest = index[0], index[1:]  # rows first, then the rest of the index
            rows = self.corrected(first)
            return rows[rest] if _is_scalar(first) else rows[(slice(None), *rest)]
        base = self._base_rows
        if index is Ellipsis or index is None or isinstance(index, tuple):
            full = base.clone()
            self._fill(full, self._last_step.bool(), slice(None))
            return full[index]
        out = base[index]
        mask = self._last_step[index]
        shares_memory = out.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        if mask.ndim == 0:
            if not bool(mask):
                return out.clone() if shares_memory else out
            if self._final is None or self._episode is None:
                return torch.zeros_like(out)
            return self._final[int(self._episode[index])].to(out.dtype).clone()
        if bool(mask.any()):
            if shares_memory:  # a view of the file (basic slicing): copy before filling
                out = out.clone()
            self._fill(out, mask.bool(), index)  # advanced indexing already returned a copy
        return out

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.corrected(),))

    def rows(self, index) -> torch.Tensor:
        return self.corrected(index)

    def whole(self) -> torch.Tensor:
        return self.corrected()

    def shape_only(self) -> torch.Tensor:
        return self._base_rows


def _is_scalar(index) -> bool:
    """Whether indexing the first dimension with ``index`` removes it."""
    if isinstance(index, int):
        return True
    return isinstance(index, torch.Tensor) and index.ndim == 0 and index.dtype != torch.bool


def _rebuild(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


# torch fills unsigned 16/32/64-bit tensors only through a signed view of the same bits
_SIGNED_VIEW = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _zero_rows(tensor: torch.Tensor, mask: torch.Tensor) -> None:
    """``tensor[mask] = 0`` for every dtype (zero has the same bits signed or not)."""
    view = _SIGNED_VIEW.get(tensor.dtype)
    (tensor.view(view) if view is not None else tensor)[mask] = 0
