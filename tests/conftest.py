"""Shared fixtures: the demo fixture trees (written once), a real GCS emulator serving the
Atari bucket, and an environment pointing the warehouse at a fresh root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from warehouse_fixtures.demo import DEMO_BUCKET, write_demo_fixtures
from warehouse_fixtures.gcs_emulator import running_emulator, upload_tree

SHARED_SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "samples"


@pytest.fixture(scope="session")
def shared_samples() -> Path:
    """``../shared/samples``: real files written by others (TFDS's authors), read in place;
    the tests that need them are skipped, saying why, only where the folder is absent."""
    if not SHARED_SAMPLES.is_dir():
        pytest.skip(
            f"the shared real samples are not at {SHARED_SAMPLES} (a checkout without "
            "../shared/samples: clone the project beside its shared/ folder)"
        )
    return SHARED_SAMPLES


@pytest.fixture(scope="session")
def demo_fixtures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fixtures")
    write_demo_fixtures(folder)
    return folder


@pytest.fixture(scope="session")
def gcs_endpoint(demo_fixtures) -> str:
    with running_emulator() as endpoint:
        upload_tree(endpoint, DEMO_BUCKET, demo_fixtures / "atari-bucket")
        yield endpoint


@pytest.fixture
def warehouse_env(tmp_path, demo_fixtures, gcs_endpoint, monkeypatch) -> Path:
    """Environment for one test: its own warehouse root and DAGSTER_HOME."""
    root = tmp_path / "warehouse"
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ATARI_REPLAY_URL", f"gs://{DEMO_BUCKET}/dqn")
    monkeypatch.setenv("OPENX_URL", str(demo_fixtures / "openx"))
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    (tmp_path / "dagster_home").mkdir()
    monkeypatch.delenv("ATARI_CHECKPOINTS", raising=False)
    monkeypatch.delenv("OPENX_MODE", raising=False)
    assert os.environ["EPISODE_WAREHOUSE_ROOT"] == str(root)
    return root
