"""Shared fixtures: the demo fixture trees (written once), a real GCS emulator serving the
Atari bucket, and an environment pointing the warehouse at a fresh root; and the test tiers.

Tiers (``./test -m unit``, ``-m integration``, ``-m system``; ``./test`` runs all three, as CI):

- ``system``: whole deployments: ``tests/e2e`` (dagster dev, the UI), ``tests/cluster``, and the
  worked trainers of ``tests/examples``.
- ``integration``: a Dagster run, the GCS emulator, a service or a child process: every test
  outside ``tests/episode_warehouse`` and ``tests/packaging``, those using the emulator or a
  warehouse environment, and those marked ``integration`` (or ``slow``).
- ``unit``: the rest. A unit test that starts a process (``subprocess``, ``fork``, a
  multiprocessing server) fails, naming the marker to add, so the tier stays what it says.
"""

from __future__ import annotations

import multiprocessing.util
import os
import subprocess
from pathlib import Path

import pytest

from warehouse_fixtures.demo import DEMO_BUCKET, write_demo_fixtures
from warehouse_fixtures.gcs_emulator import running_emulator, upload_tree

TESTS = Path(__file__).resolve().parent
SYSTEM_DIRS = {"e2e", "cluster", "examples"}
UNIT_DIRS = {"episode_warehouse", "packaging"}
SERVICE_FIXTURES = {"gcs_endpoint", "bucket_url", "warehouse_env", "instance", "hub"}


def _tier(item: pytest.Item) -> str:
    top = Path(item.path).resolve().relative_to(TESTS).parts[0]
    if top in SYSTEM_DIRS:
        return "system"
    if (
        top not in UNIT_DIRS
        or item.get_closest_marker("integration") is not None
        or item.get_closest_marker("slow") is not None
        or SERVICE_FIXTURES & set(getattr(item, "fixturenames", ()))
    ):
        return "integration"
    return "unit"


def pytest_sessionstart(session):
    # done here, before any unit test refuses child processes, so a unit test that is the
    # first of its run to need them does not fail (a fresh machine, or a file run alone):
    # matplotlib builds its font cache on first import by running fc-list, and h5py's import
    # asks platform.processor(), which runs `uname -p` once per process
    import platform

    import matplotlib.font_manager  # noqa: F401

    platform.processor()
    _absl_writes_to_the_real_stderr()
    _one_start_method()


def _one_start_method() -> None:
    """Importing torchrl sets the process's multiprocessing start method to spawn unless one is
    set already, so a test's DataLoader workers were forked or spawned depending on whether an
    earlier test of the same process imported torchrl (spawned workers import torch again: 3-4 s
    each; the exactly-once stream test took 15 s after a replay-buffer test, 1.4 s alone). The
    session uses Linux's default, fork, whatever ran before; a test of another method names its
    context."""
    import multiprocessing

    multiprocessing.set_start_method("fork", force=True)


def _absl_writes_to_the_real_stderr() -> None:
    """absl's handler keeps the ``sys.stderr`` it was imported under (pytest's capture file)
    and closes that stream when closed while ``sys.stderr`` is something else. Dagster runs
    ``logging.config.dictConfig`` in every in-process run, which closes every live handler: a
    run under ``capsys`` after TensorFlow's import closed pytest's capture file and broke every
    later test of that worker ("I/O operation on closed file"). The real stderr is never
    closed by absl."""
    import sys

    try:
        import absl.logging
    except ImportError:
        return
    absl.logging.get_absl_handler().python_handler.setStream(sys.__stderr__)


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(_tier(item))


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(request, monkeypatch):
    if request.node.get_closest_marker("unit") is None:
        return

    def refuse(*args, **kwargs):
        raise RuntimeError(
            "a unit test started a process: mark it @pytest.mark.integration (tests/conftest.py)"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", refuse)


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


def _shared(tmp_path_factory, name: str) -> Path:
    """A folder every test process of this run shares (``./test`` runs several: pytest-xdist),
    for data written once and only read after."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return shared / f"shared-{name}"


@pytest.fixture(scope="session")
def lerobot_video(tmp_path_factory) -> Path:
    """A LeRobot v3 dataset with two AV1 video cameras, written by lerobot's own writer once per
    run, whichever test process needs it first (SVT-AV1 costs ~20 s of CPU a dataset; the
    others wait for it): :data:`tests.helpers.VIDEO_SPEC`. Read-only: copy it to change it."""
    import fcntl

    from tests.helpers import VIDEO_SPEC
    from warehouse_fixtures.lerobot_writer import write_lerobot_dataset

    folder = _shared(tmp_path_factory, "lerobot-video")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = folder / "written"
        if not done.exists():
            if folder.exists():  # a process killed while writing it
                import shutil

                shutil.rmtree(folder)
            write_lerobot_dataset(VIDEO_SPEC, folder)
            done.write_text("1")
    return folder / VIDEO_SPEC.repo_id


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
def hub(tmp_path, monkeypatch):
    """The hub stand-in (``warehouse_fixtures.hub``) over an empty store, with huggingface_hub
    pointed at it (``HF_ENDPOINT``) and a cache of this test's own (``HF_HOME``); token
    ``hf_test_token`` may read private and gated repos and write."""
    from warehouse_fixtures.hub.server import HubServer
    from warehouse_fixtures.hub.store import HubStore

    with HubServer(HubStore(tmp_path / "hub-store"), tokens=("hf_test_token",)) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        # uploads: the stand-in speaks the LFS protocol, not Xet, which huggingface_hub picks
        # when hf_xet is installed (read at import: the constant here, the variable for children)
        import huggingface_hub.constants

        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
        yield server


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
