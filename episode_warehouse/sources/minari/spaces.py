"""Gymnasium spaces as Minari serializes them in ``metadata.json``, flattened to leaves.

Minari writes each space with ``minari.serialization.serialize_space``: ``{"type": "Box",
"dtype", "shape", "low", "high"}``, ``Discrete`` (``start``, ``n``; int64), ``MultiDiscrete``
(``nvec``, ``start``), ``MultiBinary`` (``n``; int8), ``Text``, and ``Dict`` (``subspaces`` by
key) and ``Tuple`` (``subspaces`` in order) of those, nested. Each leaf is one array per step
here, at a key path (``("pixels",)``; a Tuple's members are ``"0"``, ``"1"`` ...).

An image is what Minari's ``is_image_space`` calls one: a uint8 Box of 2 or 3 dimensions, at
least 32x32, bounded by 0 and 255. Minari JPEG-encodes those when ``jpeg_encoding`` is on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.guards.shapes import checked_shape

NUMERIC = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
}
MAX_LEAVES = 256
MAX_ROW_BYTES = 64 << 20  # one step of one leaf
_FIX = "the dataset's data/metadata.json is malformed; download the dataset again"


@dataclass(frozen=True)
class Leaf:
    """One array of a space: where it is, what it holds, and its bounds."""

    path: tuple[str, ...]
    kind: str  # "box", "discrete", "multi_discrete", "multi_binary", "text"
    dtype: str
    shape: tuple[int, ...]
    low: np.ndarray | None = None  # inclusive bounds (Discrete: start .. start + n - 1)
    high: np.ndarray | None = None
    image: bool = False

    @property
    def bounded(self) -> bool:
        """Whether every element has finite bounds (NaN or inf cannot be a value of it)."""
        if self.low is None or self.high is None:
            return False
        return bool(np.isfinite(self.low).all() and np.isfinite(self.high).all())


def parse_space(value: object, *, subject: str) -> list[Leaf]:
    """The leaves of a serialized space (a JSON string or its object), in Minari's order.

    Raises:
        CorruptInputError: not a space Minari writes, a dtype that is not numeric, a shape too
            large, bounds that do not fit the shape, or more than :data:`MAX_LEAVES` leaves.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise CorruptInputError(
                f"a space that is not JSON ({exc})", subject=subject, fix=_FIX
            ) from None
    leaves: list[Leaf] = []
    _walk(value, (), leaves, subject, depth=0)
    return leaves


def _walk(space: object, path: tuple[str, ...], out: list[Leaf], subject: str, depth: int):
    where = f"{subject} space {'/'.join(path) or '(root)'}"
    if not isinstance(space, dict) or depth > 16:
        raise CorruptInputError("not a serialized space", subject=where, fix=_FIX)
    kind = space.get("type")
    if kind == "Dict":
        sub = space.get("subspaces")
        if not isinstance(sub, dict):
            raise CorruptInputError("a Dict space without subspaces", subject=where, fix=_FIX)
        for key, member in sub.items():
            # a key names a file of the decoded folder: one safe segment (guards.names)
            checked_segment(key, subject=where, what="Dict space key")
            _walk(member, (*path, key), out, subject, depth + 1)
        return
    if kind == "Tuple":
        sub = space.get("subspaces")
        if not isinstance(sub, list):
            raise CorruptInputError("a Tuple space without subspaces", subject=where, fix=_FIX)
        for i, member in enumerate(sub):
            _walk(member, (*path, str(i)), out, subject, depth + 1)
        return
    if len(out) >= MAX_LEAVES:
        raise CorruptInputError(
            f"more than {MAX_LEAVES} arrays in one space", subject=where, fix=_FIX
        )
    out.append(_leaf(space, path, where))


def _leaf(space: dict, path: tuple[str, ...], where: str) -> Leaf:
    kind = space.get("type")
    if kind == "Box":
        dtype = _dtype(space.get("dtype"), where)
        shape = checked_shape(
            space.get("shape"),
            dtype=dtype,
            subject=where,
            what="a Box space",
            max_bytes=MAX_ROW_BYTES,
            fix=_FIX,
        )
        low, high = _bound(space.get("low"), shape, where), _bound(space.get("high"), shape, where)
        image = (
            dtype == "uint8"
            and len(shape) in (2, 3)
            and shape[0] >= 32
            and shape[1] >= 32
            and bool((low == 0).all())
            and bool((high == 255).all())
        )
        return Leaf(path, "box", dtype, shape, low, high, image)
    if kind == "Discrete":
        first, n = _int(space.get("start", 0), where), _int(space.get("n"), where)
        return Leaf(path, "discrete", "int64", (), np.array(first), np.array(first + n - 1))
    if kind == "MultiDiscrete":
        nvec = np.asarray(space.get("nvec"), dtype=object)
        starts = np.asarray(space.get("start", np.zeros(nvec.shape, int)), dtype=object)
        dtype = _dtype(space.get("dtype", "int64"), where)
        shape = checked_shape(
            list(nvec.shape),
            dtype=dtype,
            subject=where,
            what="a MultiDiscrete space",
            max_bytes=MAX_ROW_BYTES,
            fix=_FIX,
        )
        low = _bound(starts.tolist(), shape, where)
        return Leaf(
            path, "multi_discrete", dtype, shape, low, low + _bound(nvec.tolist(), shape, where) - 1
        )
    if kind == "MultiBinary":
        size = space.get("n")
        shape = checked_shape(
            size if isinstance(size, list) else [size],
            dtype="int8",
            subject=where,
            what="a MultiBinary space",
            max_bytes=MAX_ROW_BYTES,
            fix=_FIX,
        )
        return Leaf(path, "multi_binary", "int8", shape, np.array(0.0), np.array(1.0))
    if kind == "Text":
        return Leaf(path, "text", "str", ())
    raise CorruptInputError(
        f"a space of type {kind!r}",
        subject=where,
        fix="this warehouse reads Box, Discrete, MultiDiscrete, MultiBinary, "
        "Text, Dict and Tuple spaces",
    )


def _dtype(value: object, where: str) -> str:
    if value not in NUMERIC:
        raise CorruptInputError(
            f"the dtype {value!r} is not a numeric dtype", subject=where, fix=_FIX
        )
    return str(value)


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**62:
        raise CorruptInputError(f"{value!r} is not an integer bound", subject=where, fix=_FIX)
    return value


def _bound(value: object, shape: tuple[int, ...], where: str) -> np.ndarray:
    """Bounds as float64 that broadcast to ``shape``, kept as written (a scalar stays a scalar:
    a 400-byte space declaring a huge uint8 Box must not allocate its bounds in float64);
    JSON's Infinity is allowed."""
    try:
        array = np.asarray(value, dtype=np.float64)
        if np.broadcast_shapes(array.shape, shape) != shape:
            raise ValueError("bounds wider than the space")
        return array
    except (TypeError, ValueError):
        raise CorruptInputError(
            f"bounds {str(value)[:80]} do not fit the shape {shape}", subject=where, fix=_FIX
        ) from None
