"""docs/curation.md's walkthrough runs as written: its shell block (the reaching fixture with
planted duplicates, the audit, scores, duplicates, a curated export and a described partition)
in a fresh folder, then its Python block; the figures the page states are what it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "curation.md"

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # ~2 minutes of real runs


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_walkthrough_runs_and_prints_what_the_page_says(tmp_path):
    (shell,) = _blocks("bash")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODE_WAREHOUSE_")}
    env.update(DAGSTER_HOME=str(tmp_path / "dagster-home"), HF_HUB_OFFLINE="1")
    script = "set -euo pipefail\n" + shell.replace("./warehouse", str(ROOT / "warehouse"))
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["reach", "330", "0"] in lines and ["reach_copy", "100", "0"] in lines
    assert ["430", "300", "100"] in lines  # episodes, kept, groups: as the page says
    assert "mlcroissant: valid, 330 episode records" in done.stderr
    export = tmp_path / "curated-warehouse" / "lerobot" / "reach-curated"
    assert (export / "croissant.json").exists()

    (python,) = _blocks("python")
    (tmp_path / "walkthrough.py").write_text(python)
    ran = subprocess.run([sys.executable, "walkthrough.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "weights sum to 1.000" in ran.stdout
    frames = int(re.search(r"loads (\d+) frame records", ran.stdout).group(1))
    assert frames > 0
