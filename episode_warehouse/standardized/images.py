"""Camera frames resized to a view's size, as every VLA item and export holds them."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def resize(frames: np.ndarray, size: tuple[int, int], contiguous: bool = True) -> torch.Tensor:
    """uint8 [N, C, H, W] frames as RGB resized (bilinear, antialiased) to ``size``; as they
    are when already that size. (Octo resizes with TensorFlow's lanczos3; the pixels differ by
    the filter, not the geometry.) ``contiguous=False`` leaves a resized result channels-last
    (for a caller that copies it into its own memory: one pass instead of two)."""
    t = torch.from_numpy(frames)  # channels last as a decoder gives them: resized as they are
    if t.shape[1] == 1:  # a grey camera, as RGB like every other view
        t = t.expand(-1, 3, -1, -1)
    if tuple(t.shape[-2:]) == tuple(size):
        return t
    # torch resizes uint8 channels-last frames directly (its AVX path, 2.5x the float one; the
    # pixels agree with the float path to within 1)
    out = F.interpolate(t.contiguous(memory_format=torch.channels_last), size=size,
                        mode="bilinear", antialias=True, align_corners=False)  # fmt: skip
    return out.contiguous() if contiguous else out
