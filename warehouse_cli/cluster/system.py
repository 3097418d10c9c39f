"""The system programs a local cluster runs: PostgreSQL's server binaries and Redis.

Installed with apt when this user is root, else named with the command to run.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import subprocess
from pathlib import Path

from episode_warehouse.errors import ConfigError

log = logging.getLogger(__name__)
PACKAGES = {"postgres": "postgresql", "redis": "redis-server"}


def postgres_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` (Debian's layout),
    else the folder of an ``initdb`` on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parts[-3])
    except ValueError:
        return 0.0


def _missing() -> list[str]:
    need = []
    if postgres_bin() is None:
        need.append(PACKAGES["postgres"])
    if shutil.which("redis-server") is None:
        need.append(PACKAGES["redis"])
    return need


def ensure_installed() -> None:
    """Install PostgreSQL's server and Redis when they are missing and we can (root + apt).

    Raises:
        ConfigError: one is missing and cannot be installed here (the command is named).
    """
    need = _missing()
    if not need:
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log.info("installing %s (apt, once)", " ".join(need))
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
            env=env,
            check=False,
            capture_output=True,
        )
        need = _missing()
    if need:
        raise ConfigError(
            f"the local cluster needs {' and '.join(need)}",
            subject="warehouse cluster up",
            fix=f"sudo apt-get install -y {' '.join(need)}",
        )
