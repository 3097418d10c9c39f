"""One RLDS episode (one ``tf.train.Example`` record), decoded leaf by leaf from its features.

How TFDS wrote it (``example_serializer.py``, ``features/tensor_feature.py``): every step leaf
is one feature ``steps/<path>`` holding all T steps, flattened row-major; booleans and integers
are int64 lists (uint64 bit-cast), floats float32 lists (float64 and float16 too: cast back on
reading), strings bytes lists. ``encoding: bytes|zlib`` tensors are one bytes value per step, the
raw little-endian array (zlib-compressed for ``zlib``); with more than one unknown dimension
they are ``<path>/value`` beside ``<path>/shape``. Images are one encoded PNG or JPEG per step.
Episode leaves (``episode_metadata/file_path`` ...) are the same without the step dimension.

Step columns are decoded one at a time (:meth:`EpisodeRecord.column`), so an episode costs its
record plus one decoded column at a time beyond what the caller keeps. Nothing is trusted: counts
must match the declared shapes and the step count, integers must fit their dtype, compressed
tensors may not inflate past their declared size, images are sized from their header and checked
against the pixel limit before they are decoded.
"""

from __future__ import annotations

import math
import threading
import zlib
from concurrent.futures import Executor

import numpy as np
from google.protobuf.message import DecodeError

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.limits import LIMITS_FIX as _LIMITS_FIX
from episode_warehouse.limits import InputLimits
from episode_warehouse.sources.openx.images import checked_image_size, decode_image_bytes
from episode_warehouse.sources.openx.rlds.features import STEPS, Leaf, RldsFeatures, numpy_dtype
from episode_warehouse.tfrecord.example import parse_example

_LIST = {"int64_list": "int64", "float_list": "float", "bytes_list": "bytes"}
_MALFORMED = "the episode does not match features.json; re-download the shard or remove it"
_MAX_METADATA_VALUES = 4096


def _expected_list(leaf: Leaf) -> str:
    if leaf.kind in ("image", "text") or leaf.encoding != "none" or leaf.dtype == "string":
        return "bytes"
    return "float" if leaf.dtype.startswith("float") else "int64"


class EpisodeRecord:
    """One episode record of a shard, with its features.

    Raises (from the constructor):
        CorruptInputError: the record is not an Example, or its step count is not one number.
        LimitExceededError: more steps than the limits allow.
    """

    def __init__(
        self,
        data: bytes,
        features: RldsFeatures,
        subject: str,
        *,
        limits: InputLimits | None = None,
        pool: Executor | None = None,
    ) -> None:
        self.subject = subject
        self.features = features
        self.limits = limits or InputLimits()
        self.pool = pool
        self.budget = self.limits.decoded_budget(len(data))
        self.used = 0
        try:
            self.fields = parse_example(data).features.feature
        except DecodeError as exc:
            raise CorruptInputError(
                f"the record is not a tf.train.Example ({exc})", subject=subject, fix=_MALFORMED
            ) from exc
        self.length = self._length()
        if self.length == 0:
            raise CorruptInputError("the episode has no steps", subject=subject, fix=_MALFORMED)
        if self.length > self.limits.max_steps:
            raise LimitExceededError(
                f"the episode has {self.length} steps, over the limit of {self.limits.max_steps}",
                subject=subject,
                fix=_LIMITS_FIX,
            )

    # -- raw values -------------------------------------------------------------------------

    def _key(self, leaf: Leaf, part: str = "") -> str:
        key = f"{STEPS}/{leaf.path}" if leaf.in_steps else leaf.path
        return f"{key}/{part}" if part else key

    def _values(self, leaf: Leaf, key: str, want: str):
        feature = self.fields.get(key)
        if feature is None:
            raise CorruptInputError(
                f"{key} is declared in features.json but not in the record",
                subject=self.subject,
                fix=_MALFORMED,
            )
        kind = feature.WhichOneof("kind")
        if kind is None:  # an empty Feature: no values of any kind
            return []
        if _LIST[kind] != want:
            raise CorruptInputError(
                f"{key} is a {kind}, features.json declares {leaf.dtype} ({want} list expected)",
                subject=self.subject,
                fix=_MALFORMED,
            )
        return getattr(feature, kind).value

    def _length(self) -> int:
        """T, from the first step leaf whose count says it unambiguously."""
        for leaf in self.features.steps:
            want = _expected_list(leaf)
            key = self._key(leaf, "value" if leaf.dynamic else "")
            if key not in self.fields:
                continue
            n = len(self._values(leaf, key, want))
            if want == "bytes":
                return n
            per_step = math.prod(d for d in leaf.shape if d is not None)  # static: features.py
            if per_step:
                if n % per_step:
                    raise CorruptInputError(
                        f"{key} has {n} values, not a multiple of its shape {leaf.shape}",
                        subject=self.subject,
                        fix=_MALFORMED,
                    )
                return n // per_step
        raise CorruptInputError(
            "no step feature tells the number of steps", subject=self.subject, fix=_MALFORMED
        )

    def _spend(self, nbytes: int, key: str) -> None:
        self.used += nbytes
        if self.used > self.budget:
            raise LimitExceededError(
                f"the episode decodes to more than {self.budget} bytes at {key}",
                subject=self.subject,
                fix=_LIMITS_FIX,
            )

    # -- numbers ----------------------------------------------------------------------------

    def _numbers(self, leaf: Leaf, values, key: str) -> np.ndarray:
        """An int64/float32 list as the declared dtype, refusing values that do not fit."""
        dtype = np.dtype(leaf.dtype)
        if dtype.kind == "f":
            return np.asarray(values, dtype=np.float32).astype(dtype, copy=False)
        raw = np.asarray(values, dtype=np.int64)
        if dtype == np.bool_:
            if raw.size and (raw.min() < 0 or raw.max() > 1):
                raise CorruptInputError(
                    f"{key} is declared bool and holds {int(raw.max())}",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
            return raw.astype(np.bool_)
        if dtype == np.uint64:
            return raw.view(np.uint64)
        info = np.iinfo(dtype)
        if raw.size and (raw.min() < info.min or raw.max() > info.max):
            raise CorruptInputError(
                f"{key} is declared {leaf.dtype} and holds {int(raw.min())}..{int(raw.max())}",
                subject=self.subject,
                fix=_MALFORMED,
            )
        return raw.astype(dtype)

    def _reshape(self, flat: np.ndarray, shape: tuple[int | None, ...], key: str) -> np.ndarray:
        known = math.prod(d for d in shape if d is not None)
        if None in shape:
            if known == 0 or flat.size % known:
                raise CorruptInputError(
                    f"{key} has {flat.size} values, which shape {shape} cannot hold",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
            shape = tuple(flat.size // known if d is None else d for d in shape)
        elif flat.size != known:
            raise CorruptInputError(
                f"{key} has {flat.size} values, its shape {shape} holds {known}",
                subject=self.subject,
                fix=_MALFORMED,
            )
        return flat.reshape(shape)

    def _raw_array(self, leaf: Leaf, blob: bytes, shape: tuple[int | None, ...], key: str):
        """One encoded value: raw little-endian bytes, zlib-inflated no further than needed."""
        dtype = numpy_dtype(leaf)
        known = math.prod(d for d in shape if d is not None)
        cap = self.budget - self.used if None in shape else known * dtype.itemsize
        if leaf.encoding == "zlib":
            inflater = zlib.decompressobj()
            try:
                blob = inflater.decompress(blob, cap + 1)
            except zlib.error as exc:
                raise CorruptInputError(
                    f"{key} does not inflate ({exc})", subject=self.subject, fix=_MALFORMED
                ) from exc
            if len(blob) > cap or inflater.unconsumed_tail:
                raise LimitExceededError(
                    f"{key} inflates past the {cap} bytes its shape {shape} allows",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
        if len(blob) % dtype.itemsize:
            raise CorruptInputError(
                f"{key} has {len(blob)} bytes, not a whole number of {leaf.dtype}",
                subject=self.subject,
                fix=_MALFORMED,
            )
        if dtype == np.bool_:
            flat = np.frombuffer(blob, dtype=np.uint8) != 0
        else:
            flat = np.frombuffer(blob, dtype=dtype).astype(dtype.newbyteorder("="))
        return self._reshape(flat, shape, key)

    def _encoded(self, leaf: Leaf) -> list[np.ndarray]:
        """The values of an ``encoding: bytes|zlib`` leaf (one per step, or one)."""
        key = self._key(leaf, "value" if leaf.dynamic else "")
        blobs = list(self._values(leaf, key, "bytes"))
        shapes = [leaf.shape] * len(blobs)
        if leaf.dynamic:
            rank = len(leaf.shape)
            dims = np.asarray(self._values(leaf, self._key(leaf, "shape"), "int64"), np.int64)
            if dims.size != rank * len(blobs) or (dims < 0).any():
                raise CorruptInputError(
                    f"{self._key(leaf, 'shape')} does not give {len(blobs)} shapes of rank {rank}",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
            shapes = []
            for row in dims.reshape(len(blobs), rank):
                if any(d is not None and d != int(r) for d, r in zip(leaf.shape, row, strict=True)):
                    raise CorruptInputError(
                        f"{key} has shape {tuple(row)}, declared {leaf.shape}",
                        subject=self.subject,
                        fix=_MALFORMED,
                    )
                shapes.append(tuple(int(r) for r in row))
        out = []
        for blob, shape in zip(blobs, shapes, strict=True):
            arr = self._raw_array(leaf, blob, shape, key)
            self._spend(arr.nbytes, key)
            out.append(arr)
        return out

    def _stack(self, leaf: Leaf, rows: list[np.ndarray], key: str) -> np.ndarray:
        self._check_steps(len(rows), key)
        shapes = sorted({r.shape for r in rows})
        if len(shapes) > 1:
            raise self._ragged(key, shapes)
        return np.stack(rows)

    def _check_steps(self, n: int, key: str) -> None:
        if n != self.length:
            raise CorruptInputError(
                f"{key} has {n} steps, the episode has {self.length}",
                subject=self.subject,
                fix=_MALFORMED,
            )

    def _ragged(self, key: str, shapes: list) -> CorruptInputError:
        return CorruptInputError(
            f"{key} changes shape between steps ({shapes[:3]}): steps are stacked into one "
            "array, so one episode's steps must share a shape",
            subject=self.subject,
            fix="open an issue with the dataset's name; ragged steps are not read yet",
        )

    # -- images -----------------------------------------------------------------------------

    def _images(self, leaf: Leaf) -> CameraRows | np.ndarray:
        """The camera's frames decoded and checked, with each frame's bytes where they decode
        to its row as they are (not converted): what is stored when frames are kept encoded.
        A float32 image (TFDS's bitcast depth) comes as pixels only."""
        key = self._key(leaf)
        blobs = [bytes(b) for b in self._values(leaf, key, "bytes")]
        where = [f"{key} step {t}" for t in range(len(blobs))]
        for blob, w in zip(blobs, where, strict=True):
            c, h, width = checked_image_size(blob, f"{self.subject} {w}", self.limits)
            # a float32 image's 4 PNG channels are one float's bytes
            itemsize = 1 if leaf.dtype == "float32" else np.dtype(leaf.dtype).itemsize
            self._spend(c * h * width * itemsize, key)
        self._check_steps(len(blobs), key)
        # every image decoded on the pool, straight into one C-ordered array made by the first
        # to finish (a decoded JPEG row is a channels-last view: stacking them would keep
        # that order and cost a second copy when written)
        made: list[np.ndarray] = []
        kept: list[bytes | None] = [None] * self.length
        lock = threading.Lock()

        def decode_into(t: int) -> None:
            decoded = decode_image_bytes(blobs[t], f"{self.subject} {where[t]}", self.limits)
            img = self._checked_image(leaf, decoded, where[t])
            if img is decoded:  # no conversion: the bytes decode to this row
                kept[t] = blobs[t]
            with lock:
                if not made:
                    made.append(np.empty((self.length, *img.shape), dtype=img.dtype))
            out = made[0]
            if img.shape != out.shape[1:]:
                raise self._ragged(key, [out.shape[1:], img.shape])
            out[t] = img

        run = self.pool.map if self.pool is not None else map
        for _ in run(decode_into, range(self.length)):
            pass
        return made[0] if leaf.dtype == "float32" else CameraRows(made[0], kept)

    def _float_image(self, img: np.ndarray, where: str) -> np.ndarray:
        """A float32 image as TFDS decodes it: the PNG's 4 uint8 channels are the bytes of one
        float32 (TFDS's ``tf.bitcast`` on the little-endian machines it runs on) -> (1, H, W)."""
        if img.dtype != np.uint8 or img.shape[0] != 4:
            raise CorruptInputError(
                f"{where} decodes to {img.shape[0]} channels of {img.dtype}; a float32 image is "
                "a PNG of 4 uint8 channels (TFDS's bitcast)",
                subject=self.subject,
                fix=_MALFORMED,
            )
        floats = np.ascontiguousarray(img.transpose(1, 2, 0)).view("<f4")  # (H, W, 1)
        return np.ascontiguousarray(floats.transpose(2, 0, 1)).astype(np.float32, copy=False)

    def _checked_image(self, leaf: Leaf, img: np.ndarray, where: str) -> np.ndarray:
        """(C, H, W) of the declared dtype and channels, converted as TFDS's decoder does (grey
        to RGB by repetition, RGBA to RGB by dropping alpha) where the declaration asks for it."""
        height, width, channels = leaf.shape
        if leaf.dtype == "float32":
            img = self._float_image(img, where)
        if img.dtype != np.dtype(leaf.dtype):
            raise CorruptInputError(
                f"{where} decodes to {img.dtype}, features.json declares {leaf.dtype}",
                subject=self.subject,
                fix=_MALFORMED,
            )
        if channels is not None and img.shape[0] != channels:
            if channels == 3 and img.shape[0] == 1:
                img = np.repeat(img, 3, axis=0)
            elif channels == 3 and img.shape[0] == 4:
                img = np.ascontiguousarray(img[:3])
            else:
                raise CorruptInputError(
                    f"{where} has {img.shape[0]} channels, features.json declares {channels}",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
        for declared, actual, name in (
            (height, img.shape[1], "height"),
            (width, img.shape[2], "width"),
        ):
            if declared is not None and declared != actual:
                raise CorruptInputError(
                    f"{where} has {name} {actual}, features.json declares {declared}",
                    subject=self.subject,
                    fix=_MALFORMED,
                )
        return img

    # -- public -----------------------------------------------------------------------------

    def column(self, leaf: Leaf) -> np.ndarray | CameraRows:
        """A numeric or image step leaf as one (T, ...) array (images (T, C, H, W), with their
        bytes: :class:`CameraRows`).

        Raises:
            CorruptInputError: the values do not match the declaration or the step count.
            LimitExceededError: an image or the episode over the limits.
        """
        if leaf.kind == "image":
            return self._images(leaf)
        key = self._key(leaf)
        if leaf.encoding != "none":
            return self._stack(leaf, self._encoded(leaf), key)
        flat = self._numbers(leaf, self._values(leaf, key, _expected_list(leaf)), key)
        self._spend(flat.nbytes, key)
        return self._reshape(flat, (self.length, *leaf.shape), key)

    def texts(self, leaf: Leaf) -> list[str]:
        """A text step leaf (``Text``, or a scalar string tensor): one string per step."""
        key = self._key(leaf)
        if leaf.shape != ():
            raise CorruptInputError(
                f"{key} is a string tensor of shape {leaf.shape}; strings are read one per step",
                subject=self.subject,
                fix="open an issue with the dataset's name",
            )
        values = self._values(leaf, key, "bytes")
        self._check_steps(len(values), key)
        return [self._text(v, key) for v in values]

    def _text(self, value: bytes, key: str) -> str:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptInputError(
                f"{key} is not UTF-8 text ({exc})", subject=self.subject, fix=_MALFORMED
            ) from exc

    def metadata(self) -> dict[str, object]:
        """The episode's own leaves as JSON values: text as str, numbers as (nested) lists."""
        out: dict[str, object] = {}
        for leaf in self.features.episode:
            key = self._key(leaf)
            if leaf.kind == "text" or leaf.dtype == "string":
                values = self._values(leaf, key, "bytes")
                texts = [self._text(v, key) for v in values]
                out[leaf.path] = texts[0] if leaf.shape == () and len(texts) == 1 else texts
                continue
            if leaf.encoding != "none":
                arrays = self._encoded(leaf)
                if len(arrays) != 1:
                    raise CorruptInputError(f"{key} has {len(arrays)} values", subject=self.subject)
                arr = arrays[0]
            else:
                flat = self._numbers(leaf, self._values(leaf, key, _expected_list(leaf)), key)
                arr = self._reshape(flat, leaf.shape, key)
            if arr.size > _MAX_METADATA_VALUES:
                raise LimitExceededError(
                    f"{key} holds {arr.size} values; episode metadata is kept as catalog JSON, "
                    f"up to {_MAX_METADATA_VALUES} values a leaf",
                    subject=self.subject,
                    fix="open an issue with the dataset's name",
                )
            out[leaf.path] = arr.tolist()
        return out

    def undeclared(self) -> list[str]:
        """Record features that features.json does not declare (TFDS ignores them too)."""
        declared = set()
        for leaf in (*self.features.steps, *self.features.episode):
            key = self._key(leaf)
            declared.update({key, f"{key}/value", f"{key}/shape"} if leaf.dynamic else {key})
        return sorted(set(self.fields) - declared)
