"""A PostgreSQL server in a folder: ``initdb`` once, ``pg_ctl start``/``stop``, 127.0.0.1 only.

Every connection, over TCP and the socket, authenticates with scram-sha-256 as ``dagster`` with
the cluster's generated password (``credentials.py``); ``trust`` would let any local user in as
superuser, and a superuser can run programs as the postgres user (``COPY ... TO PROGRAM``). A
data folder made by an older version with ``trust`` gets the password and scram-sha-256 on its
next start. PostgreSQL refuses to run as root; as root the server runs as the ``postgres`` user,
which owns the data and socket folders (the cluster folder is made traversable for it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

from episode_warehouse.errors import ConfigError
from warehouse_cli import processes
from warehouse_cli.cluster.system import postgres_bin

USER = "dagster"
DATABASE = "dagster"


class Postgres:
    def __init__(self, folder: Path, port: int, password: str):
        self.folder = folder
        self.password = password
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
        env = {**os.environ, "PGPASSWORD": self.password, "PGCONNECT_TIMEOUT": "5"}
        return subprocess.run(
            [*self._as_owner(), *args], capture_output=True, text=True, check=False, env=env
        )

    def _initdb(self) -> None:
        """A new data folder whose only user ``dagster`` has the cluster's password."""
        pwfile = self.folder / ".initdb-password"
        pwfile.unlink(missing_ok=True)
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(self.password + "\n")
        self._own(pwfile)
        try:
            done = self._run(
                str(self.bin / "initdb"),
                "-U",
                USER,
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "-D",
                str(self.data),
            )
        finally:
            pwfile.unlink(missing_ok=True)
        self._check(done, "initdb")

    def _trusting(self) -> bool:
        hba = self.data / "pg_hba.conf"
        lines = [ln.split() for ln in hba.read_text().splitlines() if not ln.startswith("#")]
        return any(fields and fields[-1] == "trust" for fields in lines)

    def _require_password(self) -> None:
        """Upgrade a data folder an older version made with ``trust``: set the password while
        trust still lets us in, then require scram-sha-256 and reload."""
        escaped = self.password.replace("'", "''")
        self._check(
            self._client("psql", "-d", "postgres", "-c", f"ALTER ROLE {USER} PASSWORD '{escaped}'"),
            "setting the database password",
        )
        hba = self.data / "pg_hba.conf"
        lines = []
        for line in hba.read_text().splitlines():
            fields = line.split()
            if not line.startswith("#") and fields and fields[-1] == "trust":
                line = line[: line.rindex("trust")] + "scram-sha-256"
            lines.append(line)
        hba.write_text("\n".join(lines) + "\n")
        self._check(self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "reload"), "reload")

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
            self._initdb()
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
        if self._trusting():
            self._require_password()
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

    def answers(self) -> bool:
        """Whether the server accepts the cluster's password and answers a query."""
        done = self._client("psql", "-d", DATABASE, "-tAc", "SELECT 1")
        return done.returncode == 0 and done.stdout.strip() == "1"

    def pid(self) -> int:
        """The postmaster's pid (first line of postmaster.pid), 0 when it is not running."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return 0

    def running(self) -> bool:
        """Whether the postmaster of ``postmaster.pid`` is alive (a killed server leaves the
        file behind; ``pg_ctl start`` then starts it again)."""
        pid = self.pid()
        return bool(pid) and processes.alive(pid)

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
