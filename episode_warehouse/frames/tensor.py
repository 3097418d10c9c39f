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

from episode_warehouse.frames.plain_rows import PlainRows
from episode_warehouse.frames.rows import FrameRows
from episode_warehouse.stand_in import StandIn


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype


def placeholder(rows: int, row_shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A tensor of that shape and dtype that holds one element (a zero, expanded)."""
    return torch.zeros((), dtype=dtype).expand(rows, *row_shape)


class FrameTensor(StandIn):
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

    def rows(self, index) -> torch.Tensor:
        return self.decoded(index)

    def whole(self) -> torch.Tensor:
        return self.decoded()

    def shape_only(self) -> torch.Tensor:
        return self._plain


def leaf_of(rows: FrameRows | PlainRows) -> torch.Tensor:
    """The tensor a TensorDict holds for a TED file's rows: a :class:`FrameTensor` of frames
    stored encoded (decoded when indexed), plain rows' own tensor (nothing copied)."""
    return FrameTensor(rows) if isinstance(rows, FrameRows) else rows.tensor()


def rows_of(leaf: torch.Tensor) -> FrameRows | PlainRows:
    """The rows behind a TensorDict's leaf: an encoded camera's frames, else the tensor itself
    as plain rows; either is read by the same calls (:mod:`.plain_rows`)."""
    return leaf.frames if isinstance(leaf, FrameTensor) else PlainRows(leaf)


def _numpy_index(index):
    """A torch index as FrameRows takes it (tensors as numpy arrays)."""
    if isinstance(index, torch.Tensor):
        return index.cpu().numpy()
    if isinstance(index, tuple):
        return tuple(_numpy_index(i) for i in index)
    if isinstance(index, list):
        return np.asarray([i.item() if isinstance(i, torch.Tensor) else i for i in index])
    return index
