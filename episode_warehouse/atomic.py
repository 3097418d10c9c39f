"""Write aside, publish by rename: readers see the old artifact or the new one, never a mix.

Staging folders are siblings of their target (same file system, so ``rename`` is atomic) named
``.staging-<name>-<random>``. Two lock files sit beside each artifact:

- ``.lock-<name>`` (exclusive) serialises the *writers* of one artifact;
- ``.readers-<name>``: a reader that opens files of a folder one after another (a decoder
  streaming raw files) holds it shared (:func:`reading`); publishing takes it exclusively for
  the swap and the deletion of the old version, so such a reader never sees two versions.

Debris of a killed writer is removed by the next writer that takes the lock. The locks are
``flock`` locks on one machine's file system; across machines the run queue's per-partition
limit keeps writers apart (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import logging
import os
import shutil
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from episode_warehouse.errors import ConcurrentWriteError, ConfigError, DiskFullError, is_disk_full

log = logging.getLogger(__name__)

_STAGING = ".staging-"
_RENAME_EXCHANGE = 2  # linux/fs.h
_libc = ctypes.CDLL(None, use_errno=True)
PUBLISH_WAIT_S = 24 * 3600.0  # a publish waits this long for readers of the old version


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with renameat2(RENAME_EXCHANGE); False where unsupported."""
    renameat2 = getattr(_libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(a))


def ensure_writable_dir(path: Path, what: str, setting: str = "EPISODE_WAREHOUSE_ROOT") -> Path:
    """Create ``path`` if needed and check that it is writable, with an error that says why."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the {what} folder ({exc.strerror})",
            subject=str(path),
            fix=f"point {setting} at a folder you can write",
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"the {what} folder is not writable",
            subject=str(path),
            fix=f"point {setting} at a folder you can write, or fix its permissions",
        )
    return path


def staging_path(target: Path) -> Path:
    """A fresh staging sibling of ``target``."""
    return target.parent / f"{_STAGING}{target.name}-{uuid.uuid4().hex[:12]}"


def remove_debris(target: Path) -> int:
    """Delete staging siblings left by killed writers of ``target``; call it under the lock."""
    count = 0
    if not target.parent.exists():
        return 0
    for stale in target.parent.glob(f"{_STAGING}{target.name}-*"):
        _remove(stale)
        count += 1
    if count:
        log.info("removed %d staging leftovers of %s", count, target)
    return count


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _flock(path: Path, mode: int, timeout_s: float, waiting: str) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        deadline = time.monotonic() + timeout_s
        logged = False
        while True:
            try:
                fcntl.flock(fh.fileno(), mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConcurrentWriteError(
                        f"{waiting} for more than {timeout_s:.0f} s",
                        subject=str(path.parent / path.name.split("-", 1)[-1]),
                        fix="wait for the other run of this partition to finish, then retry",
                    ) from None
                if not logged:
                    log.info("%s: %s", path, waiting)
                    logged = True
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _readers_lock(target: Path) -> Path:
    return target.parent / f".readers-{target.name}"


@contextlib.contextmanager
def reading(target: Path, timeout_s: float = PUBLISH_WAIT_S) -> Iterator[None]:
    """Hold ``target`` still while reading it: no new version is published meanwhile."""
    with _flock(_readers_lock(target), fcntl.LOCK_SH, timeout_s, "waiting for a publish"):
        yield


def publish(staging: Path, target: Path) -> None:
    """Move ``staging`` (file or folder) to ``target`` atomically, replacing what was there.

    A folder replaces a folder by an atomic exchange where the kernel supports it; the old
    version is deleted afterwards. Both happen while no :func:`reading` block holds the target;
    readers that memory-mapped files of the old version keep them.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _flock(_readers_lock(target), fcntl.LOCK_EX, PUBLISH_WAIT_S, "waiting for readers"):
        if staging.is_dir() and target.is_dir():
            if _exchange(staging, target):
                shutil.rmtree(staging, ignore_errors=True)
                return
            old = staging_path(target)
            os.rename(target, old)
            os.rename(staging, target)
            shutil.rmtree(old, ignore_errors=True)
            return
        os.replace(staging, target)


def unpublish(target: Path) -> bool:
    """Remove a published artifact atomically (rename aside, then delete); True if it existed."""
    if not target.exists():
        return False
    with _flock(_readers_lock(target), fcntl.LOCK_EX, PUBLISH_WAIT_S, "waiting for readers"):
        aside = staging_path(target)
        os.rename(target, aside)
        _remove(aside)
    return True


@contextlib.contextmanager
def write_lock(target: Path, timeout_s: float = 600.0) -> Iterator[None]:
    """Hold the writer lock of ``target``; wait up to ``timeout_s`` for another writer.

    Raises:
        ConcurrentWriteError: another process kept the lock longer than ``timeout_s``.
    """
    lock = target.parent / f".lock-{target.name}"
    with _flock(lock, fcntl.LOCK_EX, timeout_s, "another writer holds the lock"):
        remove_debris(target)
        yield


def disk_full(target: Path, setting: str = "EPISODE_WAREHOUSE_ROOT") -> DiskFullError:
    """The one error a full disk becomes, in this process or in a worker process."""
    return DiskFullError(
        "the disk is full (nothing was published; the previous version is intact)",
        subject=str(target),
        fix=f"free space, or point {setting} at a larger disk",
    )


@contextlib.contextmanager
def staged(target: Path, *, is_dir: bool = True) -> Iterator[Path]:
    """Yield a staging path; publish it to ``target`` on success, delete it on failure.

    Use inside :func:`write_lock`.

    Raises:
        DiskFullError: the disk filled up while writing (the previous version is intact).
    """
    tmp = staging_path(target)
    try:
        if is_dir:
            tmp.mkdir(parents=True)
        else:
            tmp.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        publish(tmp, target)
    except BaseException as exc:
        _remove(tmp)
        if is_disk_full(exc):
            raise disk_full(target) from exc
        raise


def link_or_copy(src: Path, dst: Path) -> None:
    """Hard-link ``src`` at ``dst`` (no bytes copied); copy where the file system refuses."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError as exc:
        if is_disk_full(exc):
            raise
        shutil.copyfile(src, dst)


def write_json(path: Path, value: object) -> None:
    """Write a JSON file atomically (a temporary sibling renamed into place)."""
    tmp = path.with_name(f"{_STAGING}{path.name}-{uuid.uuid4().hex[:12]}")
    try:
        tmp.write_text(json.dumps(value, indent=1, sort_keys=True, allow_nan=False))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
          (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def check_user_file(path: Path) -> Path:
    """``path``, a file the user named (``--out``, ``Selection.save``): its folder exists and it
    is absent or a regular file. Anything else is refused, never replaced: a rename over
    ``/dev/null`` replaced the machine's device with a regular file.

    Raises:
        ConfigError: the folder is missing, or ``path`` is a folder, link, pipe or device.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise ConfigError(
            "its folder does not exist", subject=str(path), fix="create the folder first"
        )
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    for test, kind in _KINDS:
        if test(mode):
            raise ConfigError(
                f"the path is {kind}, not a regular file: it is never replaced",
                subject=str(path),
                fix="name a new file, or an existing regular file to replace",
            )
    return path


def write_user_json(path: Path, value: object) -> Path:
    """A JSON file the user named, written atomically after :func:`check_user_file`."""
    path = check_user_file(path)
    write_json(path, value)
    return path


def read_json(path: Path) -> dict:
    """A JSON object from ``path``, or {} when the file does not exist."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}


def copy_range(src: int, dst: int, offset: int, nbytes: int) -> None:
    """Copy ``nbytes`` from ``offset`` of ``src`` to the current position of ``dst``."""
    done = 0
    try:
        while done < nbytes:
            n = os.copy_file_range(src, dst, nbytes - done, offset + done)
            if n == 0:
                raise OSError(f"the source file ends {nbytes - done} bytes early")
            done += n
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
    while done < nbytes:  # no kernel copy between these files: through a buffer
        chunk = os.pread(src, min(nbytes - done, 8 << 20), offset + done)
        if not chunk:
            raise OSError(f"the source file ends {nbytes - done} bytes early")
        os.write(dst, chunk)
        done += len(chunk)
