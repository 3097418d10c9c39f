"""Mutations of real and fixture inputs, as hypothesis strategies: bytes and JSON fields."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

# one byte-level change: (kind, where as a fraction of the length, a byte or a count)
_BYTE_OPS = st.tuples(
    st.sampled_from(["flip", "set", "insert", "delete", "truncate", "repeat"]),
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 255),
)
byte_mutations = st.lists(_BYTE_OPS, min_size=1, max_size=3)


def mutate_bytes(data: bytes, ops: list[tuple[str, float, int]], *, start: int = 0) -> bytes:
    """``data`` with ``ops`` applied at positions in ``[start, len)`` (``start``: a header to
    keep, so that the mutation reaches past a format's first check)."""
    out = bytearray(data)
    for kind, where, value in ops:
        span = max(1, len(out) - start)
        i = min(len(out) - 1, start + int(where * span)) if out else 0
        if kind == "flip" and out:
            out[i] ^= 1 << (value % 8)
        elif kind == "set" and out:
            out[i] = value
        elif kind == "insert":
            out[i:i] = bytes([value]) * (1 + value % 16)
        elif kind == "delete" and out:
            del out[i : i + 1 + value % 16]
        elif kind == "truncate":
            del out[i:]
        elif kind == "repeat" and out:
            out[i:i] = out[i : i + 1 + value]
    return bytes(out)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["..", "../../x", "/etc/passwd", "a" * 300, "-1", "1e400", "NaN"])
)
json_values = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# (which node, in walk order, as a fraction; what to do; the new value)
field_mutations = st.lists(
    st.tuples(
        st.floats(0.0, 1.0, allow_nan=False),
        st.sampled_from(["replace", "delete", "wrap", "duplicate_key"]),
        json_values,
    ),
    min_size=1,
    max_size=3,
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def mutate_fields(doc, ops) -> object:
    """A deep copy of the JSON document ``doc`` with ``ops`` applied to nodes chosen by
    position: a node replaced by another value, deleted, wrapped in a list, or a key renamed."""
    doc = copy.deepcopy(doc)
    for where, kind, value in ops:
        paths = list(_paths(doc))
        path = paths[min(len(paths) - 1, int(where * len(paths)))]
        if not path:
            doc = value if kind == "replace" else [doc]
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if kind == "replace":
            parent[key] = value
        elif kind == "delete":
            del parent[key]
        elif kind == "wrap":
            parent[key] = [parent[key]]
        elif kind == "duplicate_key" and isinstance(parent, dict):
            parent[f"{key}/../{key}"] = parent[key]
    return doc
