"""Unpickle untrusted episode pickles: numpy arrays, dtypes and builtins only, built from data.

A pickle can name any importable callable; ``pickle.loads`` on a downloaded shard runs whatever
it names. This unpickler resolves a short list of names, and not to the real functions but to
checked stand-ins:

- an array (``numpy.core.multiarray._reconstruct`` + its state, or ``_frombuffer``) is built
  only from its full state: a shape, a dtype and data of exactly ``prod(shape) * itemsize``
  bytes. ``_reconstruct`` alone allocates uninitialized memory; here it makes a placeholder
  that its state fills, and a placeholder left without state is refused;
- a numpy scalar needs exactly ``itemsize`` bytes;
- ``bytearray`` copies bytes it is given, never allocates from a count;
- every other name is refused with :class:`ForbiddenPickleError`.

Which dtypes are acceptable for a step's values is the decoder's decision (it names the key).
"""

from __future__ import annotations

import io
import math
import pickle
from collections.abc import Callable

import numpy as np

from episode_warehouse.errors import CorruptInputError, ForbiddenPickleError


class _PendingArray:
    """What ``_reconstruct`` returns: an array-to-be, filled by ``__setstate__``."""

    __slots__ = ("array",)

    def __init__(self) -> None:
        self.array: np.ndarray | None = None

    def __setstate__(self, state) -> None:
        if not isinstance(state, tuple) or len(state) != 5:
            raise CorruptInputError("an array's state is not (version, shape, dtype, order, data)")
        _, shape, dtype, fortran, data = state
        self.array = _array_from(data, dtype, shape, "F" if fortran else "C")


def _check_shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise CorruptInputError(f"an array declares the shape {shape!r}")
    return shape


def _array_from(data, dtype, shape, order: str) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` whose bytes are ``data``, exactly as many as needed."""
    shape = _check_shape(shape)
    if not isinstance(dtype, np.dtype):
        raise CorruptInputError(f"an array's dtype is {type(dtype).__name__}, not a numpy dtype")
    count = math.prod(shape)
    if dtype.hasobject:
        if not isinstance(data, list) or len(data) != count:
            raise CorruptInputError("an object array's state does not hold its elements")
        out = np.empty(count, dtype=object)
        for i, value in enumerate(data):
            out[i] = value
        return out.reshape(shape, order=order)  # type: ignore[call-overload]
    if isinstance(data, pickle.PickleBuffer):
        data = data.raw()
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptInputError(f"an array's data is {type(data).__name__}, not bytes")
    want = count * dtype.itemsize
    if len(data) != want:
        raise CorruptInputError(
            f"an array declares {shape} {dtype} ({want} bytes) but carries {len(data)} bytes"
        )
    return np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order=order)  # type: ignore[call-overload]


def _reconstruct(subtype, shape, typecode) -> _PendingArray:
    if subtype is not np.ndarray:
        raise ForbiddenPickleError(f"the pickle reconstructs an array of type {subtype!r}")
    return _PendingArray()


def _frombuffer(buf, dtype, shape, order):
    return _array_from(buf, dtype, shape, order)


def _scalar(dtype, data=None):
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise ForbiddenPickleError("the pickle builds a numpy scalar of an object dtype")
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise CorruptInputError(f"a {dtype} scalar carries {len(data or b'')} bytes")
    return np.frombuffer(data, dtype=dtype)[0]


def _from_data(kind: type) -> Callable:
    """``bytes`` / ``bytearray`` that copy what they are given, never allocate from a count."""

    def build(source=b"", *args):
        if isinstance(source, int):
            raise ForbiddenPickleError(
                f"the pickle allocates {kind.__name__}({source}) from a count instead of from data"
            )
        return kind(source, *args)

    return build


def _encode(text, encoding="utf-8", errors="strict"):
    if not isinstance(text, str) or encoding != "latin1":
        raise ForbiddenPickleError("the pickle calls _codecs.encode other than for array bytes")
    return text.encode(encoding, errors)


_ALLOWED: dict[tuple[str, str], Callable | type] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("_codecs", "encode"): _encode,  # protocol-2 pickles carry array bytes through it
    ("builtins", "bytearray"): _from_data(bytearray),
    ("builtins", "bytes"): _from_data(bytes),
    ("__builtin__", "bytearray"): _from_data(bytearray),  # protocol 2 spells builtins so
    ("__builtin__", "bytes"): _from_data(bytes),
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "set"): set,
    ("builtins", "slice"): slice,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise ForbiddenPickleError(f"the pickle names the forbidden global {module}.{name}")
        return allowed


def _resolve(value):
    """The unpickled value with every placeholder replaced by its array."""
    if isinstance(value, _PendingArray):
        if value.array is None:
            raise CorruptInputError(
                "an array is reconstructed without its data (no state): it would be "
                "uninitialized memory"
            )
        return value.array
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_resolve(v) for v in value)
    return value


def restricted_loads(data: bytes, *, subject: str) -> object:
    """Unpickle ``data`` allowing only numpy arrays (with their data), dtypes and builtins.

    Args:
        data: the pickle bytes.
        subject: names the input in errors (``shard.tar:member``).

    Raises:
        ForbiddenPickleError: the pickle names a global outside the allowed set, or uses an
            allowed one to allocate without data.
        CorruptInputError: the bytes are not a valid pickle, or an array's state is wrong.
    """
    try:
        return _resolve(_RestrictedUnpickler(io.BytesIO(data)).load())
    except ForbiddenPickleError as exc:
        raise ForbiddenPickleError(
            exc.what,
            subject=subject,
            fix="the shard is not a trusted OpenX episode file; remove it from the mirror",
        ) from None
    except CorruptInputError as exc:
        raise CorruptInputError(
            exc.what, subject=subject, fix="re-download the shard; the episode is malformed"
        ) from None
    except MemoryError:
        raise CorruptInputError(
            "the pickle does not fit in memory", subject=subject, fix="remove the episode"
        ) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        ImportError,
        IndexError,
        KeyError,
        RecursionError,
    ) as exc:
        raise CorruptInputError(
            f"not a valid pickle ({type(exc).__name__}: {exc})",
            subject=subject,
            fix="re-download the shard; it is truncated or corrupt",
        ) from exc
