"""One user query in a child process with a hard memory bound, killed at its timeout.

DuckDB's own ``memory_limit`` covers its buffer manager, not everything a query can allocate
(``SELECT len(range(400000000))`` builds a 3 GB list under a 500 MB limit), and its interrupt is
only checked between vectors (``repeat('x', 1500000000)`` runs on past the timeout). So the
query runs in a disposable child process:

- ``RLIMIT_DATA`` (heap and private writable mappings, where every query allocation lands) is
  set to what the process holds before the query plus 1.5 x the memory limit; an allocation
  past it fails inside DuckDB or kills the process, and either way the caller gets an error
  naming the limit.
- The parent waits for the answer at most ``timeout_s`` and then kills the child (SIGKILL).
- DuckDB's temp directory is a fresh private folder, so spilling works and nothing else (such
  as the working directory's ``.tmp/``, DuckDB's default) becomes readable.
- Before the query runs, the child takes write access away from itself everywhere but that temp
  folder (Landlock, ``landlock.py``): a statement that slips past the read-only check still
  cannot change the catalog or any other file. A bucket root's filesystem is registered
  read-only. Where the kernel has no Landlock the answer says so and the caller warns once.

The child is a fresh interpreter (``python -m episode_warehouse.catalog.sandbox``: a pickled
request on stdin, a pickled answer on stdout), never a fork of the caller, which may be a
multi-threaded trainer, and never a process shared with other users of ``multiprocessing``
(a DataLoader's fork server). It imports DuckDB and of the warehouse only what reads the
root's files (:func:`~episode_warehouse.storage.base.register_files`: nothing for a folder, the
gcsfs filesystem for a bucket): the caller builds the view statements. Starting it costs about
0.44 s a query (``bench.sql_sandbox``; most of it is ``import duckdb``).
"""

from __future__ import annotations

import io
import os
import pickle
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from episode_warehouse.catalog.landlock import confine_writes
from episode_warehouse.storage.base import register_files

# The bound is the child's size before the query plus this multiple of the memory limit: DuckDB
# may exceed its own accounting somewhat (results, hash tables in flight) before it refuses.
BOUND_FACTOR = 1.5

_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b)\s*", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """Bytes in a DuckDB size such as ``2GB``, ``500MB`` or ``1.5GiB``; None if it is not one."""
    match = _SIZE.fullmatch(text)
    if match is None or match.group(2).lower() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


@dataclass(frozen=True)
class Request:
    """Everything the child needs; built by the caller, so the child imports no warehouse code."""

    sql: str
    params: list
    views: list[str]
    allowed_dir: str  # the catalog folder (or gs://.../catalog/), the only readable directory
    files: tuple[str, ...] | None  # the root's Root.duckdb_files (a bucket's filesystem)
    memory_limit: str
    memory_bytes: int
    max_rows: int | None
    temp_dir: str
    checks: tuple[str, ...] = ()  # run after the query, on the same connection


@dataclass(frozen=True)
class Answer:
    """What came back: columns and rows, or an error's kind and DuckDB's first line."""

    columns: list[str]
    rows: list[tuple]
    error_kind: str | None = None  # "permission", "memory", "duckdb", "died", "timeout"
    error: str = ""
    writes_confined: bool = True  # False: the kernel had no Landlock to refuse writes with
    checks: tuple[list[tuple], ...] = ()  # the rows of each of the request's checks


def _data_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _run(request: Request) -> Answer:
    # before DuckDB starts its threads: Landlock binds the calling thread and those it starts
    confined = confine_writes(request.temp_dir)
    con = duckdb.connect(":memory:")
    register_files(con, request.files, read_only=True)
    con.execute("SET allowed_directories = [?]", [request.allowed_dir])
    con.execute("SET temp_directory = ?", [request.temp_dir])
    for statement in request.views:
        con.execute(statement)
    con.execute("SET enable_external_access = false")
    con.execute("SET memory_limit = ?", [request.memory_limit])
    con.execute("SET enable_progress_bar = false")
    con.execute("SET lock_configuration = true")
    bound = _data_bytes() + int(BOUND_FACTOR * request.memory_bytes)
    resource.setrlimit(resource.RLIMIT_DATA, (bound, bound))
    try:
        cur = con.execute(request.sql, request.params)
        columns = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall() if request.max_rows is None else cur.fetchmany(request.max_rows)
        checks = tuple(con.execute(check).fetchall() for check in request.checks)
        return Answer(columns, rows, writes_confined=confined, checks=checks)
    except duckdb.PermissionException as exc:
        return Answer([], [], "permission", duckdb_message(exc), confined)
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        return Answer([], [], "memory", duckdb_message(exc) if str(exc) else "", confined)
    except duckdb.Error as exc:
        text = duckdb_message(exc)
        kind = "memory" if "allocat" in text.lower() else "duckdb"
        return Answer([], [], kind, text, confined)


def duckdb_message(exc: BaseException) -> str:
    """DuckDB's message with its hints (``Did you mean "episodes"?``, the candidate bindings),
    joined into one line; the SQL context lines (``LINE 1: ...`` and its caret) are left out."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [line for line in lines if line and not line.startswith("LINE ") and set(line) != {"^"}]
    return " ".join(kept)[:2000]


# What a request or an answer may name when unpickled: these classes and the value types DuckDB
# hands to Python. Anything else (a callable to run) is refused, so a child that went wrong
# cannot make its parent run code, nor the reverse.
_PICKLED = {
    (__name__, "Request"),
    (__name__, "Answer"),
    ("datetime", "datetime"),
    ("datetime", "date"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("decimal", "Decimal"),
    ("uuid", "UUID"),
    ("uuid", "SafeUUID"),
    ("zoneinfo", "ZoneInfo"),  # TIMESTAMPTZ values: pickled as getattr(ZoneInfo, "_unpickle")
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "bytearray"),
}


def _getattr(owner: object, name: str):
    """``getattr`` as pickles of ZoneInfo use it, and for nothing else."""
    import zoneinfo

    if owner is zoneinfo.ZoneInfo and name == "_unpickle":
        return zoneinfo.ZoneInfo._unpickle  # type: ignore[attr-defined]
    raise pickle.UnpicklingError(f"getattr({owner!r}, {name!r}) may not be sent")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) == ("builtins", "getattr"):
            return _getattr
        if (module, name) not in _PICKLED:
            raise pickle.UnpicklingError(f"{module}.{name} may not be sent")
        return super().find_class(module, name)


def _loads(data: bytes):
    return _Unpickler(io.BytesIO(data)).load()


def _serve() -> None:
    """The child's main: one pickled Request on stdin, one pickled Answer on stdout."""
    request = _loads(sys.stdin.buffer.read())
    try:
        answer = _run(request)
    except MemoryError:
        answer = Answer([], [], "memory", "")
    try:
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        data = pickle.dumps(Answer([], [], "memory", "the result did not fit"))
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def run_in_child(
    sql: str,
    params: list,
    *,
    views: list[str],
    allowed_dir: str,
    files: tuple[str, ...] | None,
    memory_limit: str,
    memory_bytes: int,
    max_rows: int | None,
    timeout_s: float,
    checks: tuple[str, ...] = (),
) -> Answer:
    """Run ``sql`` in a fresh sandboxed child; an Answer with ``error_kind`` set on failure,
    "timeout" when it was killed at ``timeout_s``, "died" when it ended without an answer."""
    temp_dir = tempfile.mkdtemp(prefix="episode-warehouse-sql-")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    request = Request(
        sql,
        list(params),
        views,
        allowed_dir,
        files,
        memory_limit,
        memory_bytes,
        max_rows,
        temp_dir,
        tuple(checks),
    )
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", __name__],  # -P: the working directory is not on sys.path
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        out, err = process.communicate(pickle.dumps(request), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return Answer([], [], "timeout")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)
    if process.returncode == 0 and out:
        try:
            return _loads(out)
        except (pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
            return Answer([], [], "duckdb", f"the query process sent no valid answer ({exc})")
    code = process.returncode
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    last = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
    if last and "MemoryError" not in last[0] and "alloc" not in last[0].lower():
        return Answer([], [], "duckdb", f"the query process failed ({how}): {last[0]}")
    return Answer([], [], "died", how)


if __name__ == "__main__":
    # run as the package module, so that the pickled Answer names its class importably
    from episode_warehouse.catalog import sandbox

    sandbox._serve()
