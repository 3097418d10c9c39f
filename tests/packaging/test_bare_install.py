"""The bare package is what a trainer needs: a venv with it alone (the lock's versions, no
extras) streams a selection from a local root and from a gs:// root, and none of the pipeline's
packages (Dagster, LeRobot, Celery, the GCS emulator, ...) is installed there at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from episode_warehouse.paths import WarehouseLayout
from tests.bucket.conftest import layout_of
from tests.helpers import build_atari

REPO = Path(__file__).resolve().parents[2]
TRAINER = Path(__file__).with_name("bare_trainer.py")


def _uv() -> str:
    found = shutil.which("uv") or str(REPO / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        pytest.skip("uv is not installed (./test's bootstrap installs it into .tools/)")
    return found


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A venv holding the bare package and its locked dependencies, nothing else."""
    uv, venv = _uv(), tmp_path_factory.mktemp("bare") / "venv"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([uv, "venv", "-q", str(venv), "--python", sys.executable], check=True, env=env)
    python = str(venv / "bin" / "python")
    requirements = venv.parent / "requirements.txt"
    exported = subprocess.run(
        [uv, "export", "-q", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project"],
        cwd=REPO, check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    requirements.write_text(exported.stdout)
    for args in (["-r", str(requirements)], ["--no-deps", str(REPO)]):
        subprocess.run([uv, "pip", "install", "-q", "--python", python, *args], check=True,
                       env=env, cwd=venv.parent)  # fmt: skip
    return python


def _train(python: str, root: str, env: dict | None = None) -> dict:
    run = subprocess.run(
        [python, str(TRAINER), root], capture_output=True, text=True, timeout=300,
        cwd=TRAINER.parent.parent.parent.parent, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _check(result: dict) -> None:
    assert result["importable"] == []  # nothing of the pipeline is installed
    assert sum(1 for _ in result["items"]) >= 3 and result["ted_rows"] > 0


@pytest.mark.slow  # builds a venv (~10 s from uv's cache) and two small warehouses
def test_a_bare_install_streams_from_a_local_and_a_bucket_root(
    bare_python, tmp_path, gcs_endpoint, monkeypatch
):
    local = tmp_path / "wh"
    build_atari(local, "Pong/1", 1, episodes=6)
    ours = _train(bare_python, str(local))
    _check(ours)
    warehouse = str(Path(bare_python).with_name("warehouse"))
    sql = subprocess.run([warehouse, "sql", "--root", str(local), "SELECT count(*) FROM episodes"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    from episode_warehouse.catalog import run_query

    count = run_query(WarehouseLayout.local(local).root, "SELECT count(*) FROM episodes")[1][0][0]
    assert sql.returncode == 0, sql.stderr  # SQL needs only DuckDB
    assert sql.stdout.splitlines()[2].strip() == str(count)
    run = subprocess.run([warehouse, "materialize", "atari", "Pong/1", "--root", str(local)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2 and "needs the pipeline extra" in run.stderr, run.stderr

    from episode_warehouse.gcs import gcs_client

    gcs_client(gcs_endpoint).create_bucket("bare-trainer")
    env = {"STORAGE_EMULATOR_HOST": gcs_endpoint,
           "EPISODE_WAREHOUSE_LOCAL_COPY": str(tmp_path / "s"),
           "EPISODE_WAREHOUSE_CACHE": str(tmp_path / "cache")}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    url = "gs://bare-trainer/wh"
    build_atari(layout_of(url), "Pong/1", 1, episodes=6)
    assert WarehouseLayout.from_root(url).root.bucket is not None
    remote = _train(bare_python, url, env)
    _check(remote)
    assert remote["items"] == ours["items"]  # the same selection, the same values
