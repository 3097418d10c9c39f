"""Write aside, publish by rename: readers see the old artifact or the new one, never a mix.

Staging folders are siblings of their target (same file system, so ``rename`` is atomic) named
``.staging-<name>-<random>``; a lock file ``.lock-<name>`` serialises writers of one artifact.
Debris of a killed writer is removed by the next writer that takes the lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from episode_warehouse.errors import ConcurrentWriteError, ConfigError

log = logging.getLogger(__name__)

_STAGING = ".staging-"
_RENAME_EXCHANGE = 2  # linux/fs.h
_libc = ctypes.CDLL(None, use_errno=True)


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


def ensure_writable_dir(path: Path, what: str) -> Path:
    """Create ``path`` if needed and check that it is writable, with an error that says why."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the {what} folder ({exc.strerror})",
            subject=str(path),
            fix="point EPISODE_WAREHOUSE_ROOT at a folder you can write",
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"the {what} folder is not writable",
            subject=str(path),
            fix="point EPISODE_WAREHOUSE_ROOT at a folder you can write, or fix its permissions",
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
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
        count += 1
    if count:
        log.info("removed %d staging leftovers of %s", count, target)
    return count


def publish(staging: Path, target: Path) -> None:
    """Move ``staging`` (file or folder) to ``target`` atomically, replacing what was there.

    A folder replaces a folder by an atomic exchange where the kernel supports it; the old
    version is deleted afterwards. Readers that opened files of the old version keep them.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
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
    aside = staging_path(target)
    os.rename(target, aside)
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def write_lock(target: Path, timeout_s: float = 600.0) -> Iterator[None]:
    """Hold the writer lock of ``target``; wait up to ``timeout_s`` for another writer.

    Raises:
        ConcurrentWriteError: another process kept the lock longer than ``timeout_s``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f".lock-{target.name}"
    with open(lock_path, "a+b") as fh:
        deadline = time.monotonic() + timeout_s
        waited = False
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConcurrentWriteError(
                        f"another writer held the lock for more than {timeout_s:.0f} s",
                        subject=str(target),
                        fix="wait for the other run of this partition to finish, then retry",
                    ) from None
                if not waited:
                    log.info("waiting for another writer of %s", target)
                    waited = True
                time.sleep(0.2)
        try:
            remove_debris(target)
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def staged(target: Path, *, is_dir: bool = True) -> Iterator[Path]:
    """Yield a staging path; publish it to ``target`` on success, delete it on failure.

    Use inside :func:`write_lock`.
    """
    tmp = staging_path(target)
    if is_dir:
        tmp.mkdir(parents=True)
    else:
        tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield tmp
    except BaseException as exc:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ConfigError(
                "the disk is full (nothing was published; the previous version is intact)",
                subject=str(target),
                fix="free space, or point EPISODE_WAREHOUSE_ROOT at a larger disk",
            ) from exc
        raise
    publish(tmp, target)
