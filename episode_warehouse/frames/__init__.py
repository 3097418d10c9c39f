"""Camera frames stored as the source encoded them (or compressed once, losslessly, where the
source gives pixels) and decoded where they are read: the codec (:mod:`.codec`), the rows of a
frame file (:mod:`.rows`) and the tensor a TED's camera is (:mod:`.tensor`).

``FrameTensor`` is imported when it is first asked for: the code location reads the frame
files' names and formats from here without importing torch."""

from episode_warehouse.frames.codec import decode_frame, encode_pixels
from episode_warehouse.frames.rows import (
    FrameRows,
    is_frames_file,
    offsets_file,
    open_frames,
)

__all__ = [
    "FrameRows",
    "FrameTensor",
    "decode_frame",
    "encode_pixels",
    "is_frames_file",
    "offsets_file",
    "open_frames",
]


def __getattr__(name: str):
    if name == "FrameTensor":
        from episode_warehouse.frames.tensor import FrameTensor

        return FrameTensor
    raise AttributeError(name)
