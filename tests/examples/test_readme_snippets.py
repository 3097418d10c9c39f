"""Every Python snippet of the README runs as written, as a plain script (#43: the DataLoader
snippet died without its ``if __name__ == "__main__":`` guard; another needed a variable of the
one before it), against warehouses holding what the snippets name: the demo's root
(``demo-data/warehouse``: Atari Pong/1 and Pong/5, the export ``atari-Pong-5``) and the default
root (``warehouse-data``: the LeRobot dataset ``lab/pick_place``, the OXE datasets
``fractal20220817_data`` and ``taco_play`` standardized). docs/standardized.md's snippets run
the same way."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.loading import select_episodes
from episode_warehouse.paths import WarehouseLayout
from tests.helpers import build_atari, build_lerobot, build_oxe_standardized
from warehouse_fixtures.lerobot_writer import LeRobotSpec

README = Path(__file__).resolve().parents[2] / "README.md"
STANDARDIZED = README.parent / "docs" / "standardized.md"  # its snippets run the same way
SNIPPETS = [
    s for doc in (README, STANDARDIZED) for s in re.findall(r"```python\n(.*?)```",
                                                          doc.read_text(), re.DOTALL)
]  # fmt: skip


@pytest.fixture(scope="module")
def cwd(tmp_path_factory) -> Path:
    here = tmp_path_factory.mktemp("readme")
    demo = here / "demo-data" / "warehouse"
    build_atari(demo, "Pong/1", 1, capacity=400, episodes=6, lengths=(40, 120))
    build_atari(demo, "Pong/5", 5, capacity=400, episodes=6, lengths=(40, 120))
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes "
        "WHERE partition = 'Pong/5' ORDER BY episode",
        root=demo,
    )
    request = ExportRequest("atari-Pong-5", str(demo), [tuple(r) for r in sel.rows()])
    layout = WarehouseLayout.local(demo)
    export_lerobot(request, layout.lerobot_dir("atari-Pong-5"), root=layout.root)
    spec = LeRobotSpec(repo_id="lab/pick_place", cameras={"top": (24, 32)}, lengths=(6, 8))
    build_lerobot(here / "warehouse-data", spec)
    rel = {"action/gripper_closedness_action": lambda t, n: [[0.0, 1.0, 0.0, -1.0][t % 4]]}
    build_oxe_standardized(here / "warehouse-data", "fractal20220817_data", (5, 4), rel)
    build_oxe_standardized(here / "warehouse-data", "taco_play", (6, 3))
    return here


def test_the_readme_has_its_snippets():
    assert len(SNIPPETS) >= 6


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_each_readme_snippet_runs_as_a_script(cwd, index, tmp_path):
    script = tmp_path / f"snippet_{index}.py"
    script.write_text(SNIPPETS[index])
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODE_WAREHOUSE_")}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"README snippet {index}:\n{SNIPPETS[index]}\n{done.stderr[-3000:]}"
    )
