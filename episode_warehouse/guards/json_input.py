"""JSON that comes from outside: bounded in size and depth, errors that name the file.

``json.loads`` of ``[[[[...]]]]`` 100,000 deep raises a bare ``RecursionError``; a 2 GB file is
read whole. :func:`load_json` refuses both with a :class:`CorruptInputError` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from episode_warehouse.errors import CorruptInputError, LimitExceededError

MAX_JSON_BYTES = 64 << 20  # the largest real one: an OXE dataset_info.json, ~100 KB
MAX_JSON_DEPTH = 64  # features.json nests a few levels per feature dict


def _depth(value: object) -> int:
    """Nesting depth, iteratively (no recursion for a hostile document to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


def load_json(
    data: bytes | str,
    *,
    subject: str,
    fix: str,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> object:
    """The parsed document.

    Raises:
        LimitExceededError: over ``max_bytes`` or nested deeper than ``max_depth``.
        CorruptInputError: not JSON.
    """
    if len(data) > max_bytes:
        raise LimitExceededError(
            f"the JSON document has {len(data):,} bytes, over the {max_bytes:,} allowed",
            subject=subject,
            fix=fix,
        )
    try:
        value = json.loads(data)
    except RecursionError:
        raise LimitExceededError(
            f"the JSON document nests deeper than {max_depth} levels", subject=subject, fix=fix
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptInputError(f"not JSON ({exc})", subject=subject, fix=fix) from None
    if _depth(value) > max_depth:
        raise LimitExceededError(
            f"the JSON document nests deeper than {max_depth} levels", subject=subject, fix=fix
        )
    return value


def read_json_file(path: Path, *, fix: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """:func:`load_json` of a file, its size checked before it is read."""
    size = Path(path).stat().st_size
    if size > max_bytes:
        raise LimitExceededError(
            f"the JSON file has {size:,} bytes, over the {max_bytes:,} allowed",
            subject=str(path),
            fix=fix,
        )
    return load_json(Path(path).read_bytes(), subject=str(path), fix=fix, max_bytes=max_bytes)
