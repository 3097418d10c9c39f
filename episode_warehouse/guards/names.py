"""Names and paths that come from outside stay in their folder.

A bucket is written by others: an object named ``Pong/1/replay_logs/../../../x``, a record
entry ``../../x`` or a version token ``..`` is legal to GCS and, joined to a local folder,
points outside it. Every such name is checked where it enters (:func:`checked_name`: relative,
no ``..``, no control character, each segment at most :data:`MAX_SEGMENT_BYTES` and the whole at
most :data:`MAX_NAME_BYTES`, the limits of Linux file systems), and every write or delete that
uses one goes through :func:`inside`, which also resolves the result and checks it is still
below its folder (a symlink planted in the folder cannot redirect it).

Two more kinds of path are checked here:

- a path a third-party library hands back (huggingface_hub's cache, lerobot's snapshot) goes
  through :func:`returned_path` before it is read, linked or deleted;
- the warehouse's own working folders (the trainer cache, the PNG scratch, a bucket root's local
  copy) go through :func:`no_links_below` before anything in them is written or deleted: a link
  planted there (another user's, in a shared ``/tmp``) would redirect the writes.
"""

from __future__ import annotations

import os
from pathlib import Path

from episode_warehouse.errors import ConfigError, CorruptInputError

MAX_SEGMENT_BYTES = 255  # NAME_MAX of ext4, xfs, btrfs and tmpfs
MAX_NAME_BYTES = 1024  # a relative name; PATH_MAX (4096) leaves room for the folder


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a safe relative POSIX name, or None if it is one."""
    if not isinstance(name, str) or not name:
        return "it is empty or not text"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes"
    if any(
        len(seg.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES for seg in name.split("/")
    ):
        return f"a segment is longer than {MAX_SEGMENT_BYTES} bytes (no file system holds it)"
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


def returned_path(path: str | Path, folder: str | Path, *, subject: str, what: str) -> Path:
    """``path`` (as a library handed it back) when it resolves inside ``folder`` (resolved too).

    Use before a returned path is read, linked or deleted: a hostile server can make a library
    build it from its answers (huggingface_hub names cached blobs after the ETag).

    Raises:
        CorruptInputError: naming ``subject`` and where the path leads.
    """
    resolved, base = Path(path).resolve(), Path(folder).resolve()
    if not resolved.is_relative_to(base):
        raise CorruptInputError(
            f"refused the {what} {str(path)!r}: it resolves to {resolved}, outside {base}",
            subject=subject,
            fix="the server's answers named a path outside the cache; nothing was read or "
            "deleted there. Check the endpoint (HF_ENDPOINT) and clear the cache folder",
        )
    return Path(path)


def no_links_below(base: Path, path: Path | None = None, *, setting: str) -> Path:
    """``path`` (default ``base``) when neither ``base`` nor any existing folder or file from
    ``base`` down to ``path`` is a symbolic link; ``base`` is a working folder the warehouse
    owns (``setting`` names where it is configured). ``base``'s own parents are the user's
    choice and may be links.

    Raises:
        ConfigError: naming the link and the setting.
    """
    base = Path(base)
    target = base if path is None else Path(path)
    if not target.is_relative_to(base):
        raise ConfigError(
            f"{target} is not below the working folder {base}", subject=setting, fix=_LINK_FIX
        )
    current = base
    for part in (None, *target.relative_to(base).parts):
        if part is not None:
            current = current / part
        if current.is_symlink():
            raise ConfigError(
                f"{current} is a symbolic link (to {os.readlink(current)}): nothing is written "
                "or deleted through it",
                subject=setting,
                fix=_LINK_FIX,
            )
        if not current.exists():
            break
    return target


_LINK_FIX = "point the setting at a real folder (not a link), or remove the link"
