"""A PostgreSQL server in a folder: ``initdb`` once, ``pg_ctl start``/``stop``, 127.0.0.1 only.

PostgreSQL refuses to run as root; as root the server runs as the ``postgres`` user, which owns
the data and socket folders (the cluster folder is made traversable for it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

from episode_warehouse.errors import ConfigError
from warehouse_cli.cluster.system import postgres_bin

USER = "dagster"
DATABASE = "dagster"


class Postgres:
    def __init__(self, folder: Path, port: int):
        self.folder = folder
        self.data = folder / "data"
        self.sockets = folder / "run"
        self.log = folder / "postgres.log"
        self.port = port
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise ConfigError(
                "PostgreSQL's server is not installed", fix="apt-get install postgresql"
            )
        self.bin = bin_dir

    def _as_owner(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        runuser = shutil.which("runuser")
        if runuser is None:
            raise ConfigError(
                "running PostgreSQL as root needs runuser", fix="apt-get install util-linux"
            )
        return [runuser, "-u", "postgres", "--"]

    def _own(self, *paths: Path) -> None:
        if os.geteuid() != 0:
            return
        owner = pwd.getpwnam("postgres")
        for path in paths:
            os.chown(path, owner.pw_uid, owner.pw_gid)
        for parent in self.folder.resolve().parents:  # the postgres user must reach its folder
            if not parent.stat().st_mode & 0o001:
                raise ConfigError(
                    "the postgres user cannot enter this folder, so PostgreSQL cannot reach "
                    "its data",
                    subject=str(parent),
                    fix=f"chmod o+x {parent}, or choose another --dir",
                )

    def _client(self, program: str, *args: str) -> subprocess.CompletedProcess:
        """A PostgreSQL client program against this server, as the database's user."""
        address = ("-h", "127.0.0.1", "-p", str(self.port), "-U", USER)
        return self._run(str(self.bin / program), *address, *args)

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self._as_owner(), *args], capture_output=True, text=True, check=False
        )

    def start(self) -> int:
        """Initialize the folder once, start the server, create the database; returns its pid."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o711)
        self.sockets.mkdir(exist_ok=True)
        fresh = not (self.data / "PG_VERSION").exists()
        if fresh:
            shutil.rmtree(self.data, ignore_errors=True)
            self.data.mkdir()
        self._own(self.folder, self.sockets, self.data)
        if fresh:
            self._check(
                self._run(
                    str(self.bin / "initdb"), "-U", USER, "--auth=trust", "-D", str(self.data)
                ),
                "initdb",
            )
        self.log.touch()
        self._own(self.log)
        options = f"-h 127.0.0.1 -p {self.port} -k {self.sockets}"
        self._check(
            self._run(
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-o",
                options,
                "-w",
                "start",
            ),
            "pg_ctl start",
        )
        exists = self._client(
            "psql",
            "-d",
            "postgres",
            "-tAc",
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'",
        )
        if exists.stdout.strip() != "1":
            self._check(self._client("createdb", DATABASE), "createdb")
        return self.pid()

    def pid(self) -> int:
        """The postmaster's pid (first line of postmaster.pid), 0 when it is not running."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return 0

    def stop(self, mode: str = "fast") -> None:
        if self.pid():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        deadline = time.monotonic() + 20
        while self.pid() and time.monotonic() < deadline:
            time.sleep(0.2)

    def _check(self, done: subprocess.CompletedProcess, what: str) -> None:
        if done.returncode != 0:
            raise ConfigError(
                f"{what} failed: {(done.stderr or done.stdout).strip()[-500:]}",
                subject=str(self.folder),
                fix=f"see {self.log}; remove {self.data} to start from an empty database",
            )
