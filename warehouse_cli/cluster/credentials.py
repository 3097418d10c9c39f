"""The local cluster's passwords: generated once, one 0600 file each in ``<cluster>/secrets/``.

Any user of the machine can reach 127.0.0.1, so PostgreSQL (scram-sha-256, never ``trust``) and
Redis (``requirepass``) ask for a password even on one machine. The passwords never appear on a
command line (other users can read ``/proc/*/cmdline``): every service gets them by environment
(``/proc/*/environ`` is readable only by the same user), under the names ``deploy/`` uses, and
Redis reads its password from a 0600 config file. A secret file that others could read, or that
another user owns, is refused rather than used.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import ConfigError

PG_PASSWORD_ENV = "DAGSTER_PG_PASSWORD"
BROKER_ENV = "WAREHOUSE_BROKER_URL"
BACKEND_ENV = "WAREHOUSE_BACKEND_URL"
FOLDER = "secrets"
_NAMES = ("postgres_password", "redis_password")


@dataclass(frozen=True)
class Credentials:
    """The cluster's passwords (URL-safe characters only, so they need no quoting)."""

    postgres: str
    redis: str

    def environment(self, redis_port: int) -> dict[str, str]:
        """What every process of the cluster (and a client of it) needs in its environment."""
        return {
            PG_PASSWORD_ENV: self.postgres,
            BROKER_ENV: redis_url(self.redis, redis_port, 0),
            BACKEND_ENV: redis_url(self.redis, redis_port, 1),
        }


def redis_url(password: str, port: int, db: int) -> str:
    return f"redis://:{password}@127.0.0.1:{port}/{db}"


def _check_private(path: Path, *, folder: bool) -> None:
    info = path.lstat()
    wanted = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
    if not wanted or info.st_uid != os.geteuid():
        raise ConfigError(
            f"not a {'folder' if folder else 'file'} of this user; refusing to trust it",
            subject=str(path),
            fix=f"remove {path}; `warehouse cluster up` makes a new one",
        )
    if info.st_mode & 0o077:
        raise ConfigError(
            "other users can read or change this cluster secret",
            subject=str(path),
            fix=f"chmod {'700' if folder else '600'} {path} (and change the password if others "
            "may have read it: remove the cluster folder's secrets/ and postgres/data)",
        )


def _read(path: Path) -> str:
    _check_private(path, folder=False)
    value = path.read_text(encoding="ascii").strip()
    if not value or not all(c.isalnum() or c in "-_" for c in value):
        raise ConfigError(
            "this cluster secret is empty or not a generated password",
            subject=str(path),
            fix=f"remove {path} and the cluster's postgres/data; `warehouse cluster up` "
            "makes new ones",
        )
    return value


def load(cluster: Path) -> Credentials:
    """The passwords of the cluster in ``cluster``.

    Raises:
        ConfigError: they are missing, or readable by other users.
    """
    folder = cluster / FOLDER
    if not folder.exists():
        raise ConfigError(
            "this cluster has no passwords yet",
            subject=str(folder),
            fix="`warehouse cluster up` makes them",
        )
    _check_private(folder, folder=True)
    return Credentials(*(_read(folder / name) for name in _NAMES))


def load_or_create(cluster: Path) -> Credentials:
    """The cluster's passwords, generated (32 random bytes each) the first time."""
    folder = cluster / FOLDER
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(folder, folder=True)
    for name in _NAMES:
        path = folder / name
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
    return load(cluster)


def write_private(path: Path, text: str) -> None:
    """Write a file only this user can read (a config holding a password), replacing it."""
    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(part, path)
