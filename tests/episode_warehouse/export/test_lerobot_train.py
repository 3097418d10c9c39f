"""LeRobot's own training script trains on our exports, unchanged (#71 item 1).

``lerobot-train`` (lerobot 0.6.1 with its ``training`` extra, in a side environment:
scripts/side_env.sh) runs a few CPU steps of ACT on exports of DROID (LeRobot's port schema), an
OXE dataset with a dict action (RT-1's, written from its published features.json), a Minari
dataset with a camera and a LeRobot source, and Diffusion (a small U-Net) on DROID; each ends
its training with finite losses. The first batch lerobot-train's dataset factory builds from the
same arguments holds ``observation.state`` equal to the TED's values at those rows.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.loading import select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.open import open_ted_folder
from tests.helpers import build_lerobot, build_minari, build_openx_stages, build_oxe_standardized
from warehouse_fixtures.droid import write_droid
from warehouse_fixtures.lerobot_writer import LeRobotSpec
from warehouse_fixtures.minari_writer import ARM_ID, MinariSpec, write_minari_dataset

pytestmark = [
    pytest.mark.slow(
        reason="lerobot-train in its own environment (installed once, ~1 min): five runs of "
        "~20-40 s on CPU, each with torch's and lerobot's imports"
    ),
    # one after the other on one worker: two trainings at once on 2 cores, each with torch's
    # threads for every core, took over 15 minutes each (900 s timeouts) where one takes 157 s
    pytest.mark.xdist_group("lerobot_train"),
]
PROJECT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
FRACTAL = "fractal20220817_data"
ARM = MinariSpec("fx/arm/hdf5-v0", env=ARM_ID, max_steps=20, episodes=3)
TELEOP = LeRobotSpec(repo_id="owner/teleop", lengths=(14, 12, 15))


@pytest.fixture(scope="module")
def side_python() -> str:
    done = subprocess.run([str(PROJECT / "scripts" / "side_env.sh"), "lerobot-train"],
                          capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _export(layout: WarehouseLayout, source: str, partition: str, out: Path) -> Path:
    selection = select_episodes(
        f"SELECT source, partition, episode, start, length FROM episodes WHERE source = "
        f"'{source}' AND partition = '{partition}' ORDER BY episode",
        root=layout.folder,
    )
    rows = [(s, p, int(e), int(a), int(n)) for s, p, e, a, n in zip(
        selection.source, selection.partition, selection.episode, selection.start,
        selection.length, strict=True)]  # fmt: skip
    name = partition.replace("/", "-")
    export_lerobot(ExportRequest(name, str(layout.folder), rows), out / name, workers=1)
    return out / name


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """name -> (export folder, TED folder, the TED keys observation.state is made of)."""
    tmp = tmp_path_factory.mktemp("train")
    layout = WarehouseLayout.local(tmp / "wh")
    write_droid(tmp / "droid-src", shards=1, per_shard=2)
    build_openx_stages(layout, tmp / "droid-src", "droid")
    build_oxe_standardized(layout, FRACTAL, [24, 20])
    build_minari(layout, write_minari_dataset(ARM, tmp / "minari"), ARM.dataset_id)
    build_lerobot(layout, TELEOP)
    out = tmp / "exports"
    fractal_ted = open_ted_folder(layout.ted_dir("openx", FRACTAL))
    fractal_state = sorted(
        "observation/" + "/".join((k,) if isinstance(k, str) else k)
        for k in fractal_ted["observation"].keys(True, True)
        if fractal_ted["observation"].get(k).dtype.is_floating_point
        and "embedding" not in ((k,) if isinstance(k, str) else k)[-1]
    )
    return {
        "droid": (_export(layout, "openx", "droid", out), layout.ted_dir("openx", "droid"),
                  ["observation/joint_position", "observation/gripper_position"]),
        "fractal": (_export(layout, "openx", FRACTAL, out), layout.ted_dir("openx", FRACTAL),
                    fractal_state),
        "minari": (_export(layout, "minari", ARM.dataset_id, out),
                   layout.ted_dir("minari", ARM.dataset_id), ["observation/state"]),
        "lerobot": (_export(layout, "lerobot", TELEOP.repo_id, out),
                    layout.ted_dir("lerobot", TELEOP.repo_id), ["observation/state"]),
    }  # fmt: skip


def _train_args(root: Path, policy: str, out: Path) -> list[str]:
    args = [
        f"--dataset.repo_id=local/{root.name}", f"--dataset.root={root}",
        f"--policy.type={policy}", "--policy.device=cpu", "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null", "--steps=3", "--batch_size=4",
        "--num_workers=0", f"--output_dir={out}", "--save_checkpoint=false",
        "--wandb.enable=false", "--log_freq=1", "--seed=0",
    ]  # fmt: skip
    if policy == "act":
        args += ["--policy.chunk_size=10", "--policy.n_action_steps=10"]
    if policy == "diffusion":  # a small U-Net: the data's path is the same, the steps 4x cheaper
        args += ["--policy.down_dims=[64,128,256]"]
    return args


@pytest.mark.parametrize(
    ("name", "policy"),
    [("droid", "act"), ("droid", "diffusion"), ("fractal", "act"), ("minari", "act"),
     ("lerobot", "act")],
)  # fmt: skip
def test_lerobot_train_runs_on_the_export_and_reads_the_teds_state(
    side_python, exports, tmp_path, name, policy
):
    root, ted_dir, state_keys = exports[name]
    args = _train_args(root, policy, tmp_path / "run")
    train = Path(side_python).parent / "lerobot-train"
    done = subprocess.run([str(train), *args], capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert "End of training" in log, log[-4000:]
    losses = [float(v) for v in re.findall(r"\bloss:([-+0-9.eE]+|nan|inf)", log)]
    assert len(losses) >= 3, log[-4000:]
    assert all(math.isfinite(v) for v in losses), losses

    first_batch = [side_python, str(HERE / "side_first_batch.py")]
    batch = subprocess.run(
        [*first_batch, *_train_args(root, policy, tmp_path / "b")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert batch.returncode == 0, batch.stderr[-4000:]
    first = json.loads(batch.stdout.strip().splitlines()[-1])
    td = open_ted_folder(ted_dir)
    rows = np.asarray(first["index"])  # whole partitions in episode order: index = TED row
    want = np.concatenate(
        [td.get(tuple(k.split("/")))[rows].numpy().reshape(len(rows), -1) for k in state_keys],
        axis=1,
    ).astype(np.float32)
    got = np.asarray(first["state"], dtype=np.float32)
    if got.ndim == 3:  # Diffusion's two observation steps: the second is the row's own
        got = got[:, -1]
    np.testing.assert_array_equal(got, want)
