"""Downloads through injected faults: retried, resumed, verified; never accepted corrupted."""

import json

import pytest

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import SourceUnreachableError
from episode_warehouse.retry import RetryPolicy
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.storage.local import LocalRoot
from tests.reliability.fault_proxy import FaultProxy
from warehouse_fixtures.demo import DEMO_BUCKET

FAULTS = [
    "503",
    "reset",
    "truncate",
    "corrupt",
    "timeout",
    "503",
    None,
    "truncate",
    "corrupt",
    None,
    "reset",
    "503",
]


def _mirror(proxy_url, dest, attempts=6):
    store = open_blob_store(
        f"gs://{DEMO_BUCKET}/dqn",
        RetryPolicy(attempts=attempts, base_s=0.05, timeout_s=2),
        endpoint=proxy_url,
    )
    _, report = mirror_run(
        store,
        "Pong",
        5,
        dest,
        CheckpointSubset("all"),
        root=LocalRoot(dest.parent),
        code_version="t",
        workers=2,
    )
    return report


def test_faults_are_retried_and_no_corrupt_file_is_accepted(gcs_endpoint, demo_fixtures, tmp_path):
    source = demo_fixtures / "atari-bucket" / "dqn" / "Pong" / "5" / "replay_logs"
    with FaultProxy(gcs_endpoint, FAULTS, stall_s=4) as proxy:
        report = _mirror(proxy.url, tmp_path / "raw")
    injected = sum(proxy.injected.values())
    assert injected == len([f for f in FAULTS if f])
    files = sorted(p.name for p in source.iterdir())
    mirrored = tmp_path / "raw" / "replay_logs"
    accepted_corrupt = [
        n for n in files if (mirrored / n).read_bytes() != (source / n).read_bytes()
    ]
    assert accepted_corrupt == []
    assert sorted(p.name for p in mirrored.iterdir()) == files
    assert not (tmp_path / ".partial-raw").exists()  # no .part left
    assert report.stats.retries >= injected - 1
    assert report.stats.rejected_corrupt >= 2
    figures = {
        "faults_injected": dict(proxy.injected),
        "retries": report.stats.retries,
        "rejected_corrupt": report.stats.rejected_corrupt,
        "resumed_bytes": report.stats.resumed_bytes,
        "files_accepted_corrupted": len(accepted_corrupt),
    }
    (tmp_path / "figures.json").write_text(json.dumps(figures))
    print("fault figures:", figures)


def test_a_blob_that_never_matches_its_crc32c_is_refused(gcs_endpoint, tmp_path):
    with (
        FaultProxy(gcs_endpoint, ["corrupt"], repeat_last=True) as proxy,
        pytest.raises(SourceUnreachableError, match="download failed after 3 attempts"),
    ):
        _mirror(proxy.url, tmp_path / "raw", attempts=3)
    assert not (tmp_path / "raw").exists()  # nothing published
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")] == []
    # what was downloaded is kept for the next attempt, outside the published folder
    assert all(p.name.endswith(".part") for p in (tmp_path / ".partial-raw").iterdir())
