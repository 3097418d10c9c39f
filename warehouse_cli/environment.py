"""Where the CLI's Dagster instance lives: one per warehouse root (``DAGSTER_HOME``, default
``./.dagster_home/<root>-<hash>``).

Creating an instance and binding it to its root happen together, under an exclusive lock on
the instance's folder (``.instance.lock``): two first runs on one fresh shared ``DAGSTER_HOME``
(two roots) gave three outcomes in three tries (a run blocked on a free slot, SQLite's
``table alembic_version already exists``, a refusal); now the first binds and creates the
instance, the other waits for it, then is refused (another root) or uses it (the same root).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DAGSTER_YAML = """\
# written by `warehouse`: one catalog writer at a time, a few runs in parallel
concurrency:
  pools:
    default_limit: 1
  runs:
    max_concurrent_runs: 4
telemetry:
  enabled: false
# progress of long steps (files downloaded, checkpoints decoded, ...) in run logs
python_logs:
  managed_python_loggers: [episode_warehouse]
  python_log_level: INFO
"""


ROOT_MARK = "warehouse-root.json"  # which warehouse root this instance's runs built


def root_url(root: str | os.PathLike | None = None) -> str:
    """The warehouse root a command writes: ``root``, else ``$EPISODE_WAREHOUSE_ROOT``, else
    ``./warehouse-data``; a folder as its absolute path, a bucket as its URL."""
    from episode_warehouse.storage import root_setting

    return root_setting(root or os.environ.get("EPISODE_WAREHOUSE_ROOT") or "warehouse-data")


def dagster_home_base() -> Path:
    """``$DAGSTER_HOME``, else ``<project>/.dagster_home`` (the per-root instances' parent)."""
    return Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home").resolve()


def default_dagster_home(root: str | os.PathLike | None = None) -> Path:
    """The Dagster instance of the warehouse root ``root`` (see :func:`root_url`), created with a
    ``dagster.yaml``: one instance per root, so the UI never shows one root's materializations
    as another's. ``$DAGSTER_HOME`` when set (bound to the first root it serves; another root is
    refused), else ``<project>/.dagster_home/<root's name>-<hash of its URL>``.

    Raises:
        ConfigError: ``$DAGSTER_HOME`` already holds the runs of another root.
    """
    url = root_url(root)
    if os.environ.get("DAGSTER_HOME"):
        home = dagster_home_base()
    else:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", url.rstrip("/").rsplit("/", 1)[-1]) or "root"
        home = dagster_home_base() / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"
    home.mkdir(parents=True, exist_ok=True)
    with _locked(home):
        _check_bound(home, url)
        config = home / "dagster.yaml"
        if not config.exists():
            tmp = config.with_name(f"dagster.yaml.{os.getpid()}")
            tmp.write_text(DAGSTER_YAML)
            os.replace(tmp, config)
    return home


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """The instance folder's lock: its creation and its binding are one step."""
    with open(home / ".instance.lock", "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _check_bound(home: Path, url: str) -> None:
    from episode_warehouse.errors import ConfigError

    mark = home / ROOT_MARK
    bound = json.loads(mark.read_text()).get("root") if mark.is_file() else url
    if bound != url:
        raise ConfigError(
            f"this Dagster instance holds the runs of the warehouse root {bound}, not of "
            f"{url}: its UI would show one root's data as the other's",
            subject=f"DAGSTER_HOME={home}",
            fix="give each warehouse root its own DAGSTER_HOME (or unset it: ./warehouse "
            "then keeps one instance per root under .dagster_home/)",
        )


def _bind(home: Path, url: str) -> None:
    """Record that ``home`` holds runs of ``url`` (call under :func:`_locked`)."""
    _check_bound(home, url)
    mark = home / ROOT_MARK
    if not mark.is_file():
        tmp = mark.with_name(f"{ROOT_MARK}.{os.getpid()}")
        tmp.write_text(json.dumps({"root": url}, allow_nan=False))
        os.replace(tmp, mark)


def _check_usable(root: str | os.PathLike | None) -> None:
    """Refuse a root that no run could build in (a file, a folder that cannot be made), with
    the error the run itself would give.

    Raises:
        ConfigError: naming the root and the fix.
    """
    from episode_warehouse.atomic import ensure_writable_dir
    from episode_warehouse.settings import ROOT_ENV
    from episode_warehouse.storage import parse_root

    writer = parse_root(root_url(root), writer=True)  # a bucket's: its local copy, bound
    ensure_writable_dir(writer.folder, f"warehouse root ({ROOT_ENV})")


def bind_dagster_home(root: str | os.PathLike | None = None) -> None:
    """Record that ``root``'s instance holds runs of ``root``.

    Raises:
        ConfigError: the instance holds the runs of another root.
    """
    home = default_dagster_home(root)
    with _locked(home):
        _bind(home, root_url(root))


def cli_instance(root: str | os.PathLike | None = None):
    """The persistent Dagster instance of ``root``'s :func:`default_dagster_home`, bound to
    ``root`` and its storage created in one step under the instance's lock.

    Raises:
        ConfigError: the instance holds the runs of another root.
    """
    import dagster as dg

    _check_usable(root)  # a root no run can build in never binds an instance
    home = default_dagster_home(root)
    with _locked(home):
        _bind(home, root_url(root))
        instance = dg.DagsterInstance.from_config(str(home))
        instance.get_runs(limit=1)  # the run, event and schedule storages exist from here
        instance.event_log_storage.get_concurrency_keys()
    return instance
