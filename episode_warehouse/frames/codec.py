"""One frame's bytes as stored, and the pixels they decode to.

A stored frame is one of:

- the source's own JPEG or PNG bytes, as published (RLDS, the WebDataset repack, LeRobot image
  datasets, Minari): a JPEG decoded by libjpeg-turbo through simplejpeg (the accurate integer
  IDCT and fancy upsampling: bit-identical to torchvision's ``decode_image``, PIL's and
  TensorFlow's ``INTEGER_ACCURATE``; tests compare them), straight into memory the caller owns
  where it can (:func:`decode_frame_into`: a batch's slot, no copy); a PNG (its own bit depth)
  with torchvision's ``decode_image``;
- a raw frame compressed once with Zstandard (level 3), for sources whose frames come as
  pixels (Dopamine checkpoints, RL Unplugged after its workers decode, Minari, LeRobot image
  arrays): the codec was chosen by measurement (``bench.frame_codecs``: 0.084x the raw bytes on
  real Atari frames and 4 us to decode, against PNG's 0.125x and 36 us);
- empty: a row of zeros (the observation files' extra last row).

The kind is told by the bytes' own signature, so one file may mix them (a frame the source
converted, say grey to RGB, is stored as its converted pixels).

**One acceptance rule** (:func:`declared`, each codec's ``accept``), called by ingest
(:func:`decode_published`), the audit, every loader, the export, the viewer and Rerun alike:
before anything is decoded, the header is read as the decoder reads it (a JPEG's by
libjpeg-turbo itself, never by a parser of ours that a hidden frame header can fool; a libjpeg
warning there is a refusal), a JPEG may have at most :data:`MAX_JPEG_SCANS` scans (10,000
empty progressive scans took 17-21 s a decode), and the declared size must be the row's (or,
at ingest, within ``max_image_pixels``): a frame cannot make the decoder allocate more than one
row. The decode is strict (a cut or damaged scan is refused, never filled with grey), so a frame
one reader refuses is refused by every reader and never published, and a published frame
decodes to the same pixels everywhere.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import simplejpeg

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.image_header import PNG_SIGNATURE, image_format, png_header
from episode_warehouse.limits import LIMITS_FIX

JPEG_SIGNATURE = b"\xff\xd8\xff"
ZSTD_SIGNATURE = b"\x28\xb5\x2f\xfd"
VIDEO_REF = b"EWVR"  # a reference into a video file (frames/video.py decodes it)
ZSTD_LEVEL = 3
# progressive JPEGs from common encoders have 10 (libjpeg) to ~20 (mozjpeg) scans; every scan
# makes the decoder pass over the whole image again
MAX_JPEG_SCANS = 64
_FIX = "re-materialize the decoded stage of this partition (the stored frame is damaged)"
_local = threading.local()


def _zstd():
    """This thread's Zstandard contexts (a compressor and a decompressor, a few hundred KB:
    the only decoder state a frame reader keeps)."""
    contexts = getattr(_local, "zstd", None)
    if contexts is None:
        import zstandard

        contexts = (zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdDecompressor())
        _local.zstd = contexts
    return contexts


# ``(blobs, out, places, shape, dtype, where)``: ``blobs[k]`` into ``out[places[k]]``,
# ``where(k)`` naming it for errors
RunDecoder = Callable[
    [Sequence[bytes | memoryview], np.ndarray, Sequence[int], tuple[int, ...], np.dtype,
     Callable[[int], str]],
    None,
]  # fmt: skip


@dataclass(frozen=True)
class Declared:
    """What a frame's header declares, as its decoder reads it."""

    channels: int
    height: int
    width: int
    dtype: np.dtype

    def row(self) -> tuple[int, int, int]:
        return (self.channels, self.height, self.width)


@dataclass(frozen=True)
class Codec:
    """One kind of stored frame: the signature its bytes start with, the media type a viewer
    serves them as (None: drawn, not served as stored) and how they become a row (sizes checked
    before anything is decoded; None: a video reference, decoded by its camera's files)."""

    kind: str
    signature: bytes
    media_type: str | None
    decode: Callable[[bytes | memoryview, tuple[int, ...], np.dtype, str], np.ndarray] | None
    # a small grey image (float32), where the codec can decode scaled (JPEG: 1/8 a side)
    preview: Callable[[bytes | memoryview, tuple[int, ...], str], np.ndarray] | None = None
    # the row written into memory the caller owns, ``(blob, out, shape, where)``; False where
    # it cannot write there (the caller then copies ``decode``'s result)
    decode_into: Callable[[bytes | memoryview, np.ndarray, tuple[int, ...], str], bool] | None = (
        None
    )
    # frames that all start with this signature into ``out[places[k]]`` (see
    # :func:`decode_frames_into`); None: one frame at a time
    decode_run: RunDecoder | None = None
    # the acceptance rule: the header read as the decoder reads it, ``(blob, where)``; None:
    # no image header (raw pixels, a video reference)
    accept: Callable[[bytes | memoryview, str], Declared] | None = None
    # the bytes a whole frame ends with (JPEG's EOI, PNG's IEND chunk); b"": none to check
    trailer: bytes = b""


class OtherSizeError(CorruptInputError):
    """A frame whose header declares, or whose pixels have, another size than its rows."""


def codec_of(blob: bytes | memoryview) -> Codec | None:
    """The codec whose signature ``blob`` starts with, or None."""
    head = bytes(blob[:8])
    codec = _BY_HEAD.get(head[:4]) or _BY_HEAD.get(head[:3])  # (JPEG's signature: 3 bytes)
    return codec if codec is not None and head.startswith(codec.signature) else None


def kind(blob: bytes | memoryview) -> str:
    """``jpeg``, ``png``, ``zstd``, ``video`` or ``empty``; anything else is ``unknown``."""
    if not len(blob):
        return "empty"
    codec = codec_of(blob)
    return "unknown" if codec is None else codec.kind


def plain_png(blob: bytes) -> bool:
    """Whether ``blob`` is an 8-bit grey or RGB PNG: one whose pixels are what any decoder
    gives (no palette, alpha or 16-bit samples a reader may convert), so its bytes can stand
    for the pixels a decoder made of it."""
    return (
        len(blob) > 25 and blob.startswith(PNG_SIGNATURE) and blob[24] == 8 and blob[25] in (0, 2)
    )


def encode_pixels(row: np.ndarray) -> bytes:
    """A raw frame (any shape and dtype) compressed losslessly; :func:`decode_frame` with the
    same shape and dtype gives it back bit for bit."""
    return _zstd()[0].compress(np.ascontiguousarray(row).data)


def declared_size(blob: bytes | memoryview) -> int | None:
    """The size a zstd frame's header declares for its content (None: it declares none, or
    the header does not parse). python-zstandard allocates what a frame declares before it
    looks at ``max_output_size``: a 2 GiB declaration took 2.6 GB before its size was compared
    with the row's; compared first, it never does."""
    import zstandard

    try:
        size = zstandard.frame_content_size(bytes(blob[:18]))  # the header: at most 18 bytes
    except zstandard.ZstdError:
        return None
    return None if size < 0 else int(size)


def decode_frame(
    blob: bytes | memoryview, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    """The pixels of one stored frame, of exactly ``shape`` and ``dtype`` (a ``(H, W)`` row: a
    one-channel image squeezed, as the decoded layout keeps grey frames).

    Raises:
        CorruptInputError: bytes of no known kind, a header that declares another size, bytes
            that do not decode (naming ``where``).
    """
    dtype = np.dtype(dtype)
    if not len(blob):
        return np.zeros(shape, dtype)
    codec = codec_of(blob)
    if codec is None or codec.decode is None:  # a video reference is decoded by its files
        raise CorruptInputError(
            "a frame is neither JPEG, PNG nor Zstandard bytes"
            + (" (a video reference outside a video camera)" if codec is not None else ""),
            subject=where,
            fix=_FIX,
        )
    return codec.decode(blob, shape, dtype, where)


def declared(blob: bytes | memoryview, where: str) -> Declared:
    """What a JPEG's or PNG's header declares, read by the rule every reader follows (the
    module's docs): the codec's ``accept``.

    Raises:
        CorruptInputError: bytes of no image codec, or a header its decoder refuses.
    """
    codec = codec_of(blob) if len(blob) else None
    if codec is None or codec.accept is None:
        found = image_format(bytes(blob[:12]))
        raise CorruptInputError(
            f"the image is {'a ' + found.upper() if found != 'unknown' else 'of no known format'}"
            ", not the JPEG or PNG a camera holds: refused before decoding",
            subject=where,
            fix="re-encode the camera's frames as JPEG or PNG at the source (or download the "
            "file again if the bytes are damaged)",
        )
    return codec.accept(blob, where)


def decode_published(blob: bytes | memoryview, where: str, max_pixels: int) -> np.ndarray:
    """A frame as a source published it (JPEG or PNG bytes): accepted as every reader accepts
    it, its size within ``max_pixels`` before anything is allocated, then decoded by the
    decoder the readers use, to ``(C, H, W)`` of its own dtype. What ingest calls: a frame this
    refuses is never published, and one it decodes decodes to the same pixels everywhere.

    Raises:
        CorruptInputError: as :func:`declared` and :func:`decode_frame`;
            ``LimitExceededError`` over ``max_pixels``.
    """
    info = declared(blob, where)
    if info.height * info.width > max_pixels:
        raise LimitExceededError(
            f"the image declares {info.width}x{info.height} pixels, over the limit of {max_pixels}",
            subject=where,
            fix=LIMITS_FIX,
        )
    return decode_frame(blob, info.row(), info.dtype, where)


def decode_frame_into(
    blob: bytes | memoryview, out: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> None:
    """One stored frame decoded into ``out`` (a row of ``shape`` and ``dtype`` in memory the
    caller owns, in any memory order): straight into it where the codec can (a JPEG into
    channels-last memory), else decoded and copied.

    Raises:
        CorruptInputError: as :func:`decode_frame`.
    """
    codec = codec_of(blob) if len(blob) else None
    into = codec.decode_into if codec is not None else None
    if into is None or not into(blob, out, shape, where):
        out[...] = decode_frame(blob, shape, dtype, where)


def decode_frames_into(
    blobs: Sequence[bytes | memoryview],
    out: np.ndarray,
    places: Sequence[int],
    shape: tuple[int, ...],
    dtype: np.dtype,
    where: Callable[[int], str],
) -> None:
    """Stored frames ``blobs`` decoded into ``out[places[k]]`` (rows of ``shape`` and ``dtype``
    in memory the caller owns; ``where(k)`` names the k-th for errors). The first frame's codec
    is looked up once: when every frame shares its signature and it decodes runs (JPEG,
    Zstandard: the common batch), they go to it in one call; otherwise each frame that shares
    the signature goes straight to its ``decode_into`` (a JPEG: one decoder call) and any
    other frame (an empty row, a PNG among JPEGs), or one that entry cannot write, through
    :func:`decode_frame_into`.

    Raises:
        CorruptInputError: as :func:`decode_frame`.
    """
    codec = codec_of(blobs[0]) if blobs else None
    into = codec.decode_into if codec is not None else None
    same = [codec is not None and bytes(blob[: len(codec.signature)]) == codec.signature
            for blob in blobs]  # fmt: skip
    if codec is not None and codec.decode_run is not None and all(same):
        codec.decode_run(blobs, out, places, shape, np.dtype(dtype), where)
        return
    for k, (blob, place) in enumerate(zip(blobs, places, strict=True)):
        row = out[place]
        if into is None or not same[k] or not into(blob, row, shape, where(k)):
            decode_frame_into(blob, row, shape, dtype, where(k))


def grey(pixels: np.ndarray) -> np.ndarray:
    """float32 (H, W) of a row as the TED keeps it: (C, H, W) or (H, W)."""
    f = pixels.astype(np.float32)
    return f[:3].mean(0) if f.ndim == 3 else f


def decode_preview(
    blob: bytes | memoryview, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    """A small grey image of one stored frame (float32): a JPEG decoded at 1/8 of each side
    (libjpeg-turbo's scaled IDCT, through OpenCV; every coefficient is still read, so a
    truncated frame fails as it does at full size), any other kind decoded whole and made grey.
    What the curation passes look at (perceptual hashes, the audit's decoded sample); sizes are
    checked first.

    Raises:
        CorruptInputError: as :func:`decode_frame`.
    """
    codec = codec_of(blob) if len(blob) else None
    if codec is not None and codec.preview is not None:
        return codec.preview(blob, shape, where)
    return grey(decode_frame(blob, shape, dtype, where))


def _decode_zstd(
    blob: bytes | memoryview, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    import zstandard

    nbytes = math.prod(shape) * dtype.itemsize  # (np.prod of a tuple: 4 us a frame)
    said = declared_size(blob)
    if said is not None and said != nbytes:
        raise _other_size(where, f"{said:,} bytes (its header says)", shape, dtype)
    try:
        raw = _zstd()[1].decompress(blob, max_output_size=nbytes)
    except zstandard.ZstdError as exc:
        raise CorruptInputError(
            f"a frame does not decode ({exc})", subject=where, fix=_FIX
        ) from exc
    if len(raw) != nbytes:
        raise _other_size(where, f"{len(raw)} bytes", shape, dtype)
    return np.frombuffer(raw, dtype).reshape(shape)


def _decode_zstd_run(
    blobs: Sequence[bytes | memoryview],
    out: np.ndarray,
    places: Sequence[int],
    shape: tuple[int, ...],
    dtype: np.dtype,
    where: Callable[[int], str],
) -> None:
    """Zstandard frames into ``out``: the same checks as :func:`_decode_zstd` (the declared size
    before decoding, the decoded size after), in one loop with nothing else per frame."""
    import zstandard

    nbytes = math.prod(shape) * dtype.itemsize
    decompress, declared = _zstd()[1].decompress, zstandard.frame_content_size
    k = 0
    try:
        for k, (blob, place) in enumerate(zip(blobs, places, strict=True)):
            said = declared(blob[:18])
            if said >= 0 and said != nbytes:
                raise _other_size(where(k), f"{said:,} bytes (its header says)", shape, dtype)
            raw = decompress(blob, max_output_size=nbytes)
            if len(raw) != nbytes:
                raise _other_size(where(k), f"{len(raw)} bytes", shape, dtype)
            out[place] = np.frombuffer(raw, dtype).reshape(shape)
    except zstandard.ZstdError as exc:
        raise CorruptInputError(
            f"a frame does not decode ({exc})", subject=where(k), fix=_FIX
        ) from exc


def _accept_png(blob: bytes | memoryview, where: str) -> Declared:
    header = png_header(blob)
    if header is None:
        raise CorruptInputError("the PNG's header does not read", subject=where, fix=_FIX)
    channels, height, width, depth = header
    return Declared(channels, height, width, np.dtype(np.uint16 if depth == 16 else np.uint8))


def _decode_png(
    blob: bytes | memoryview, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    """A PNG, its header checked against the row first, decoded by libpng (torchvision)."""
    _check_row(_accept_png(blob, where), shape, dtype, where)
    return _decode_image(bytearray(blob), shape, dtype, where)  # the decoder's writable copy


# libjpeg-turbo's colorspaces (``decode_jpeg_header``) by component count, and the colorspace
# simplejpeg decodes each count to (a 4-component JPEG as its CMYK samples, as torchvision's
# decode_image gives them)
_COMPONENTS = {"Gray": 1, "YCbCr": 3, "RGB": 3, "CMYK": 4, "YCCK": 4}
_DECODED_AS = {1: "GRAY", 3: "RGB", 4: "CMYK"}
_SCAN = re.compile(rb"\xff\xda")  # a scan's marker (entropy-coded data stuffs every 0xff)


def _accept_jpeg(blob: bytes | memoryview, where: str) -> Declared:
    """A JPEG's header read by libjpeg-turbo, the decoder itself (a warning while it reads the
    markers is an error: six stray bytes after APP0, a frame header hidden behind ``FF 00``),
    and its scans counted: a bound on the decoder's work before it starts.

    Raises:
        CorruptInputError: a header the decoder refuses, a colorspace it cannot give, or
            more than :data:`MAX_JPEG_SCANS` scans (a ``LimitExceededError``).
    """
    try:
        height, width, space, _ = simplejpeg.decode_jpeg_header(blob)
    except ValueError as exc:
        raise CorruptInputError(
            f"the JPEG's header does not read ({exc})", subject=where, fix=_FIX
        ) from None
    channels = _COMPONENTS.get(space)
    if channels is None:
        raise CorruptInputError(
            f"a JPEG of colorspace {space!r}", subject=where, fix=_FIX
        )  # fmt: skip
    scans = len(_SCAN.findall(blob))
    if scans > MAX_JPEG_SCANS:
        raise LimitExceededError(
            f"the JPEG has {scans} scans, over the {MAX_JPEG_SCANS} any encoder writes (each "
            "one decodes the whole image again)",
            subject=where,
            fix=_FIX,
        )
    return Declared(channels, height, width, np.dtype(np.uint8))


def _channels(shape: tuple[int, ...]) -> int:
    """A row's channels: ``C`` of ``(C, H, W)`` (a grey camera may be ``(1, H, W)``), or 1."""
    return shape[0] if len(shape) == 3 else 1


def _check_row(declared: Declared, shape: tuple[int, ...], dtype: np.dtype, where: str) -> None:
    """The declared frame is a row of ``shape`` and ``dtype`` (checked before any decode).

    Raises:
        CorruptInputError: naming what the header declares and what the row is.
    """
    if (
        (declared.height, declared.width) != tuple(shape[-2:])
        or declared.channels != _channels(shape)
        or declared.dtype != np.dtype(dtype)
    ):
        got = (f"{declared.channels} component(s) of {declared.height}x{declared.width} "
               f"{declared.dtype} (its header says)")  # fmt: skip
        raise _other_size(where, got, shape, np.dtype(dtype))


def pixels_last(row: tuple[int, ...]) -> bool:
    """Whether a camera's ``(C, H, W)`` rows are decoded as ``(H, W, C)`` memory, as JPEG and
    PNG decoders give them (3 or 4 channels): the memory order a batch holds them in."""
    return len(row) == 3 and row[0] in (3, 4)


def _pixels_last(out: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``out`` (a row of ``shape``, ``(C, H, W)`` or ``(H, W)``, or rows of it) seen as the
    decoder writes pixels, ``(..., H, W, C)`` or ``(..., H, W)``; None where a row is not
    writable, contiguous uint8 memory so seen (a copy is written instead)."""
    if out.dtype != np.uint8 or _channels(shape) not in _DECODED_AS or not out.flags.writeable:
        return None
    rows = out.ndim > len(shape)
    target = np.moveaxis(out, out.ndim - 3, -1) if len(shape) == 3 else out
    row = target[0] if rows and len(target) else target  # (every row has the same strides)
    return target if row.flags.c_contiguous else None


def _decode_jpeg_pixels(
    blob: bytes | memoryview, target: np.ndarray, channels: int, where: str
) -> None:
    """The decoder call: ``blob`` (accepted) into ``target``, channels last, strictly (a cut,
    random or misordered scan is refused, as torchvision refuses nothing of it)."""
    try:
        simplejpeg.decode_jpeg(blob, colorspace=_DECODED_AS[channels], buffer=target,
                               strict=True)  # fmt: skip
    except ValueError as exc:
        raise CorruptInputError(
            f"a frame does not decode ({exc})", subject=where, fix=_FIX
        ) from None


def _decode_jpeg_into(
    blob: bytes | memoryview, out: np.ndarray, shape: tuple[int, ...], where: str
) -> bool:
    """A JPEG accepted for a row of ``shape`` and written by libjpeg-turbo into ``out``, a
    uint8 row held channels last (or a grey ``(H, W)`` row). False, with nothing decoded, for
    other memory (the caller copies :func:`_decode_jpeg`'s row).

    Raises:
        CorruptInputError: the frame is not accepted for the row, or does not decode.
    """
    _check_row(_accept_jpeg(blob, where), shape, np.dtype(np.uint8), where)
    target = _pixels_last(out, shape)
    if target is None:
        return False
    _decode_jpeg_pixels(blob, target, _channels(shape), where)
    return True


def _decode_jpeg(
    blob: bytes | memoryview, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    """A JPEG row in fresh memory, channels last as every decoder gives pixels."""
    _check_row(_accept_jpeg(blob, where), shape, dtype, where)
    memory = (*shape[1:], shape[0]) if len(shape) == 3 else shape
    out: np.ndarray = np.empty(memory, np.uint8)
    _decode_jpeg_pixels(blob, out, _channels(shape), where)
    return out.transpose(2, 0, 1) if len(shape) == 3 else out


def _decode_jpeg_run(
    blobs: Sequence[bytes | memoryview],
    out: np.ndarray,
    places: Sequence[int],
    shape: tuple[int, ...],
    dtype: np.dtype,
    where: Callable[[int], str],
) -> None:
    """JPEG frames into ``out[places[k]]``, each by the rule :func:`_decode_jpeg_into` follows
    (accepted for the row, then one decoder call straight into its place), the memory seen as
    pixels once for the batch: in a worker, the Python between two decoder calls runs on
    caches the decoder has just filled (docs/read-path.md). Memory the decoder cannot write
    goes through :func:`decode_frame_into`, which copies."""
    target, channels, uint8 = _pixels_last(out, shape), _channels(shape), np.dtype(np.uint8)
    if target is None:
        for k, place in enumerate(places):
            decode_frame_into(blobs[k], out[place], shape, dtype, where(k))
        return
    for k, place in enumerate(places):
        blob, name = blobs[k], where(k)
        _check_row(_accept_jpeg(blob, name), shape, uint8, name)
        _decode_jpeg_pixels(blob, target[place], channels, name)


def _preview_jpeg(blob: bytes | memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
    """A JPEG accepted for its row, decoded grey at 1/8 of each side (libjpeg-turbo's scaled
    IDCT reads every coefficient, so a damaged frame fails as it does at full size); a
    4-component JPEG decoded whole and made grey."""
    _check_row(_accept_jpeg(blob, where), shape, np.dtype(np.uint8), where)
    if _channels(shape) == 4:
        return grey(_decode_jpeg(blob, shape, np.dtype(np.uint8), where))
    height, width = shape[-2:]
    try:
        pixels = simplejpeg.decode_jpeg(
            blob,
            colorspace="GRAY",
            strict=True,
            min_height=-(-height // 8),
            min_width=-(-width // 8),
        )
    except ValueError as exc:
        raise CorruptInputError(
            f"a frame does not decode ({exc})", subject=where, fix=_FIX
        ) from None
    return pixels[..., 0].astype(np.float32)


def _decode_image(
    data: bytearray, shape: tuple[int, ...], dtype: np.dtype, where: str
) -> np.ndarray:
    import torch
    from torchvision.io import ImageReadMode, decode_image

    try:
        pixels = decode_image(
            torch.frombuffer(data, dtype=torch.uint8), mode=ImageReadMode.UNCHANGED
        ).numpy()
    except RuntimeError as exc:
        raise CorruptInputError(
            f"a frame does not decode ({exc})", subject=where, fix=_FIX
        ) from exc
    if len(shape) == 2 and pixels.shape[0] == 1:
        pixels = pixels[0]
    if pixels.shape != tuple(shape) or pixels.dtype != dtype:
        raise _other_size(where, f"{pixels.shape} {pixels.dtype}", shape, dtype)
    return pixels


def _other_size(where: str, got: str, shape: tuple[int, ...], dtype: np.dtype):
    return OtherSizeError(
        f"a frame decodes to {got}, its camera's rows are {tuple(shape)} {np.dtype(dtype)}",
        subject=where,
        fix=_FIX,
    )


# Every kind of stored frame, by signature: a new codec is one entry here.
CODECS: tuple[Codec, ...] = (
    Codec(
        "jpeg",
        JPEG_SIGNATURE,
        "image/jpeg",
        _decode_jpeg,
        _preview_jpeg,
        decode_into=_decode_jpeg_into,
        decode_run=_decode_jpeg_run,
        accept=_accept_jpeg,
        trailer=b"\xff\xd9",
    ),
    Codec(
        "png",
        PNG_SIGNATURE,
        "image/png",
        _decode_png,
        accept=_accept_png,
        trailer=b"IEND\xaeB`\x82",
    ),  # fmt: skip
    Codec("zstd", ZSTD_SIGNATURE, None, _decode_zstd, decode_run=_decode_zstd_run),
    Codec("video", VIDEO_REF, None, None),
)
_BY_HEAD = {c.signature[:4]: c for c in CODECS}


def whole_frames(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kinds: set[str] | None = None
) -> np.ndarray:
    """For frames ``data[starts[i]:ends[i]]`` (uint8, one buffer), whether each is a whole frame
    of a known kind (of ``kinds``: all by default), read from its bytes alone (no decode): it
    starts with a codec's signature and ends with that codec's trailer (a JPEG's EOI, a PNG's
    IEND chunk)."""
    sizes = ends - starts
    whole = np.zeros(len(starts), bool)
    for codec in (c for c in CODECS if kinds is None or c.kind in kinds):
        need = len(codec.signature) + len(codec.trailer)
        fits = sizes >= max(need, 8)
        match = fits.copy()
        for i, byte in enumerate(codec.signature):
            match[fits] &= data[starts[fits] + i] == byte
        for i, byte in enumerate(codec.trailer):
            match[fits] &= data[ends[fits] - len(codec.trailer) + i] == byte
        whole |= match
    return whole
