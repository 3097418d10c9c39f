"""Helpers for tests that run the CLI as separate processes and kill or race them."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

LINEAGE = ("run_id", "materialized_at")


class Runner:
    def __init__(self, env: dict, logs: Path) -> None:
        self.env, self.logs, self.count = env, logs, 0

    def start(self, *args: str, root: Path) -> subprocess.Popen:
        self.count += 1
        # one Dagster instance per warehouse root, beside it (the CLI refuses to mix roots)
        home = Path(root).parent / f".dagster_home-{Path(root).name}"
        env = {**self.env, "EPISODE_WAREHOUSE_ROOT": str(root), "DAGSTER_HOME": str(home)}
        log = open(self.logs / f"run-{self.count}.log", "wb")  # noqa: SIM115 - closed by GC
        return subprocess.Popen(
            [sys.executable, "-m", "warehouse_cli.main", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def run(self, *args: str, root: Path, timeout: float = 300) -> int:
        return self.start(*args, root=root).wait(timeout)

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker processes
        proc.wait()


@pytest.fixture(scope="module")
def runner(demo_fixtures, gcs_endpoint, tmp_path_factory) -> Runner:
    """CLI runs against the demo sources, each root with its own DAGSTER_HOME-backed history."""
    from warehouse_fixtures.demo import DEMO_BUCKET

    logs = tmp_path_factory.mktemp("logs")
    env = {
        **os.environ,
        "ATARI_REPLAY_URL": f"gs://{DEMO_BUCKET}/dqn",
        "OPENX_URL": str(demo_fixtures / "openx"),
        "STORAGE_EMULATOR_HOST": gcs_endpoint,
    }
    env.pop("ATARI_CHECKPOINTS", None)
    return Runner(env, logs)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every artifact's bytes by relative path; catalog Parquet without lineage columns."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if (
            not path.is_file()
            or path.name.startswith((".lock-", ".readers-"))
            or rel.endswith("catalog.duckdb")
        ):
            continue
        if rel.startswith("catalog/") and path.suffix == ".parquet":
            table = pq.read_table(path)
            keep = [c for c in table.column_names if c not in LINEAGE]
            out[rel] = repr(table.select(keep).to_pylist()).encode()
        elif rel.startswith("lerobot/") and rel.endswith(
            ("warehouse_export.json", "warehouse_selection.json")
        ):
            continue  # records of when and from which root (their content is tested apart)
        elif rel.startswith("lerobot/") and path.suffix == ".parquet":
            # lerobot orders some columns by set iteration (PYTHONHASHSEED): compare content
            table = pq.read_table(path)
            out[rel] = repr(table.select(sorted(table.column_names)).to_pydict()).encode()
        elif rel.startswith("lerobot/") and rel.endswith(".json"):
            # lerobot writes stats.json keys in set order (PYTHONHASHSEED): compare content
            out[rel] = json.dumps(json.loads(path.read_text()), sort_keys=True).encode()
        else:
            out[rel] = path.read_bytes()
    return out


def debris(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.name.startswith(".staging-") or p.name.endswith(".part")
    )
