"""Take write access away from a process, but for one folder: Linux's Landlock, through ctypes.

The SQL sandbox's child can read the catalog; DuckDB's ``allowed_directories`` lets a statement
that reaches it write there too (``EXPLAIN ANALYZE COPY ... TO '<catalog>/rows/...'`` did). With
Landlock (Linux 5.13+, no privilege needed, root included) the child restricts itself before the
query runs: every way of changing the file system (write, truncate, create, remove, rename,
link) is refused by the kernel everywhere but below the query's private temp folder, whatever
the statement. Reading is left to DuckDB's own sandbox (``allowed_directories``).

Where the kernel has no Landlock (older kernels, macOS) :func:`confine_writes` returns False,
the caller says so, and only the statement check (``query.check_read_only``) stands.
"""

from __future__ import annotations

import ctypes
import os

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_VERSION = 1 << 0  # landlock_create_ruleset flag: return the ABI version

# LANDLOCK_ACCESS_FS_* rights that change the file system, with the ABI that introduced them
_WRITE_RIGHTS = {
    1 << 1: 1,  # WRITE_FILE
    1 << 4: 1,  # REMOVE_DIR
    1 << 5: 1,  # REMOVE_FILE
    1 << 6: 1,  # MAKE_CHAR
    1 << 7: 1,  # MAKE_DIR
    1 << 8: 1,  # MAKE_REG
    1 << 9: 1,  # MAKE_SOCK
    1 << 10: 1,  # MAKE_FIFO
    1 << 11: 1,  # MAKE_BLOCK
    1 << 12: 1,  # MAKE_SYM
    1 << 13: 2,  # REFER (link or rename across folders)
    1 << 14: 3,  # TRUNCATE
}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where there is none."""
    if not hasattr(os, "O_PATH"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(0, int(version))


def confine_writes(writable: str) -> bool:
    """Restrict this process (and its future children) so that nothing but ``writable`` and
    what is below it can be written, created, truncated, renamed or removed. Irreversible.

    Returns:
        True when the kernel enforces it, False where Landlock is not available.

    Raises:
        OSError: Landlock is available but refused the ruleset.
    """
    abi = abi_version()
    if abi < 1:
        return False
    rights = sum(bit for bit, since in _WRITE_RIGHTS.items() if since <= abi)
    libc = _libc()
    attr = _RulesetAttr(rights)
    ruleset = libc.syscall(
        _CREATE_RULESET,
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
    )
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        folder = os.open(writable, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
        try:
            beneath = _PathBeneathAttr(rights, folder)
            if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                            ctypes.byref(beneath), ctypes.c_uint32(0)) < 0:  # fmt: skip
                raise OSError(ctypes.get_errno(), "landlock_add_rule failed")
        finally:
            os.close(folder)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return True
