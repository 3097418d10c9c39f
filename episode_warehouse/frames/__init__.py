"""Camera frames stored as the source encoded them (or compressed once, losslessly, where the
source gives pixels) and decoded where they are read: the codec (:mod:`.codec`), the rows of a
frame file (:mod:`.rows`) and the tensor a TED's camera is (:mod:`.tensor`)."""

from episode_warehouse.frames.codec import decode_frame, encode_pixels
from episode_warehouse.frames.rows import (
    FrameRows,
    is_frames_file,
    offsets_file,
    open_frames,
)
from episode_warehouse.frames.tensor import FrameTensor

__all__ = [
    "FrameRows",
    "FrameTensor",
    "decode_frame",
    "encode_pixels",
    "is_frames_file",
    "offsets_file",
    "open_frames",
]
