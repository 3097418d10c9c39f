"""``materialize ... --through lerobot --video`` prints no encoder chatter without --verbose
(#57 item 16: SVT-AV1 printed ~20 ``Svt[info]`` lines an episode, from C, past logging)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from warehouse_fixtures.droid import write_droid

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2]


def test_a_video_export_is_quiet_without_verbose(tmp_path):
    write_droid(tmp_path / "src", shards=1, per_shard=1)
    env = {**os.environ, "OPENX_URL": str(tmp_path / "src"),
           "DAGSTER_HOME": str(tmp_path / "dagster")}  # fmt: skip
    env.pop("SVT_LOG", None)
    (tmp_path / "dagster").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "warehouse_cli.main", "materialize", "openx", "droid",
         "--through", "lerobot", "--video", "--root", str(tmp_path / "wh")],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Svt[" not in done.stdout + done.stderr
    assert list((tmp_path / "wh" / "lerobot").rglob("*.mp4"))
