"""Unpickle untrusted episode pickles: numpy arrays, dtypes and builtins only.

A pickle can name any importable callable; ``pickle.loads`` on a downloaded shard runs whatever
it names. This unpickler resolves only the globals that numpy arrays, numpy scalars and plain
containers need, and refuses every other name with :class:`ForbiddenPickleError`.
"""

from __future__ import annotations

import io
import pickle

from episode_warehouse.errors import CorruptInputError, ForbiddenPickleError

_ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),  # protocol-2 pickles carry array bytes through _codecs.encode
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "frozenset"),
        ("builtins", "set"),
        ("builtins", "slice"),
    }
)


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise ForbiddenPickleError(f"the pickle names the forbidden global {module}.{name}")


def restricted_loads(data: bytes, *, subject: str) -> object:
    """Unpickle ``data`` allowing only numpy arrays, dtypes and builtin values.

    Args:
        data: the pickle bytes.
        subject: names the input in errors (``shard.tar:member``).

    Raises:
        ForbiddenPickleError: the pickle names a global outside the allowed set.
        CorruptInputError: the bytes are not a valid pickle.
    """
    try:
        return _RestrictedUnpickler(io.BytesIO(data)).load()
    except ForbiddenPickleError as exc:
        raise ForbiddenPickleError(
            exc.what,
            subject=subject,
            fix="the shard is not a trusted OpenX episode file; remove it from the mirror",
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
    ) as exc:
        raise CorruptInputError(
            f"not a valid pickle ({type(exc).__name__}: {exc})",
            subject=subject,
            fix="re-download the shard; it is truncated or corrupt",
        ) from exc
