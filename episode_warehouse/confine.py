"""Names that come from outside (object names, record entries, version tokens) stay in their folder.

A bucket is written by others: an object named ``Pong/1/replay_logs/../../../x``, a record
entry ``../../x`` or a version token ``..`` is legal to GCS and, joined to a local folder,
points outside it. Every such name is checked where it enters (:func:`checked_name`), and every
write or delete that uses one goes through :func:`inside`, which also resolves the result and
checks it is still below its folder (a symlink planted in the folder cannot redirect it).
"""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.errors import CorruptInputError


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a safe relative POSIX name, or None if it is one."""
    if not isinstance(name, str) or not name:
        return "it is empty or not text"
    if name.startswith("/"):
        return "it is an absolute path"
    if "\\" in name:
        return "it holds a backslash"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it holds a control character"
    if any(seg in ("", ".", "..") for seg in name.split("/")):
        return "it has an empty, '.' or '..' segment"
    return None


def checked_name(name: object, *, subject: str, what: str = "object name") -> str:
    """``name`` itself when it is a safe relative name (segments joined by ``/``, none empty,
    ``.`` or ``..``, no backslash, no control character, not absolute).

    Raises:
        CorruptInputError: naming ``subject`` (where the name came from) and the name.
    """
    problem = name_problem(name)
    if problem is not None:
        raise CorruptInputError(
            f"refused the {what} {name!r}: {problem}, so it could leave its folder",
            subject=subject,
            fix="rename or remove it at the source; nothing was written or deleted",
        )
    return name  # type: ignore[return-value]


def checked_segment(name: object, *, subject: str, what: str) -> str:
    """``name`` when it is one safe path segment (no ``/`` either)."""
    checked_name(name, subject=subject, what=what)
    if "/" in name:  # type: ignore[operator]
        raise CorruptInputError(
            f"refused the {what} {name!r}: it must be one name, without '/'",
            subject=subject,
            fix="rename or remove it at the source; nothing was written or deleted",
        )
    return name  # type: ignore[return-value]


def inside(base: Path, name: str, *, subject: str, what: str = "object name") -> Path:
    """``base / name`` after checking ``name`` and that the resolved path stays below ``base``
    (resolved too).

    Raises:
        CorruptInputError: the name is unsafe, or resolves outside ``base`` (a link in it).
    """
    path = Path(base) / checked_name(name, subject=subject, what=what)
    root = Path(base).resolve()
    if not path.resolve().is_relative_to(root):
        raise CorruptInputError(
            f"refused the {what} {name!r}: it resolves to {path.resolve()}, outside {root}",
            subject=subject,
            fix=f"remove the link below {root}; nothing was written or deleted",
        )
    return path
