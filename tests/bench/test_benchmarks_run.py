"""Every benchmark runs from a fresh checkout (#57 item 16: ``python -m bench.loading`` failed on
one, its build inside a branch that ran only when an older TED existed). Each runs here at a
tiny size (``BENCH_SIZE=tiny``; its figures mean nothing) in a copy of the project's files as a
clone has them (tracked and new files, nothing ignored: no ``bench/data``, no results), with
``../shared`` beside it as CI has it. A benchmark that needs another's output builds it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2]

# module, arguments: each benchmark at its tiny size (BENCH_SIZE=tiny sets the rest)
BENCHMARKS = [
    ("bench.atari_decode", []),
    ("bench.bucket_stream", []),
    ("bench.catalog", ["--episodes", "2000", "--partitions", "4"]),
    ("bench.data_plane", []),
    ("bench.frame_codecs", []),
    ("bench.frames", []),
    ("bench.hub", []),
    ("bench.incremental", []),
    ("bench.lerobot_export", []),
    ("bench.lerobot_import", []),
    ("bench.lerobot_v21", []),
    ("bench.loading", []),
    ("bench.minari_decode", []),
    ("bench.openx_decode", []),
    ("bench.openx_rlds", []),
    ("bench.quality", []),
    ("bench.rlu_decode", []),
    ("bench.root_walk", []),
    ("bench.sensor_tick", []),
    ("bench.sql_sandbox", []),
    ("bench.trust_guards", []),
    ("bench.viewer", []),
    ("bench.vla_mixture", []),
    # its backfill with a killed worker is test_local_cluster's (a cluster's start is minutes
    # of CI); bench.cluster_backfill runs a benchmark's backfill from the copy
    ("bench.droid", ["--skip-cluster"]),
    ("bench.cluster_backfill", []),
    ("bench.curation", []),
    ("bench.droid_scale", []),
    ("bench.droid_lance", []),
    ("bench.doctor_vs_audit", []),
]


def test_every_benchmark_is_listed():
    modules = {f"bench.{p.stem}" for p in (PROJECT / "bench").glob("*.py")}
    # revisions compares two checkouts of any listed one; droid_scale_* are droid_scale's parts;
    # octo_side is vla_mixture's Octo side (it runs in a side environment)
    helpers = {"bench.__init__", "bench.measure", "bench.revisions", "bench.droid_scale_plane",
               "bench.droid_scale_loaders", "bench.octo_side"}  # fmt: skip
    assert modules - helpers == {m for m, _ in BENCHMARKS}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The project's files as a clone holds them, beside a link to ../shared."""
    base = tmp_path_factory.mktemp("fresh")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    clone = base / "clone"
    for name in filter(None, listed):
        source = PROJECT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    (base / "shared").symlink_to(PROJECT.parent / "shared")
    return clone


# benchmarks that start a Postgres/Redis/Celery cluster run on the test process the cluster tests
# run on, one cluster at a time (./test --dist loadgroup)
# (bench.droid_scale's tiny run backfills its ranges on one too)
CLUSTERS = {"bench.cluster_backfill", "bench.droid_scale"}


@pytest.mark.parametrize(
    ("module", "args"),
    [pytest.param(m, a, id=m, marks=[pytest.mark.xdist_group("cluster")] if m in CLUSTERS else [])
     for m, a in BENCHMARKS],
)  # fmt: skip
def test_the_benchmark_runs_from_a_fresh_checkout(checkout, module, args, tmp_path):
    # SIDE_ENVS: the project's side environments (lerobot 0.3.3, lerobot-doctor), not a second
    # install of several GB into the copy
    env = {**os.environ, "BENCH_SIZE": "tiny", "DAGSTER_HOME": str(tmp_path / "dagster"),
           "EPISODE_WAREHOUSE_CACHE": str(tmp_path / "cache"),
           "SIDE_ENVS": str(PROJECT / ".side")}  # fmt: skip
    (tmp_path / "dagster").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=checkout, env=env,
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"{module}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
