"""The standardized stage through the asset graph (``--through standardized``), its lineage,
a SQL-weighted mixture over the catalog, and a LeRobot dataset joining a mixture through its
declared mapping (refused, with the mapping to write, until it has one)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.loading import ted_collate
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.standardized import (
    VLADataset,
    dataset_statistics,
    mixture_weights,
    open_standardized,
)
from tests.episode_warehouse.standardized.conftest import REL, features_json
from warehouse_cli.main import main
from warehouse_cli.runner import stage_assets
from warehouse_fixtures.lerobot_writer import TELEOP, write_lerobot_dataset
from warehouse_fixtures.oxe_from_features import write_from_features

pytestmark = pytest.mark.integration


@pytest.fixture
def oxe_folder(shared_samples, tmp_path):
    src = tmp_path / "oxe"
    overrides = {"action/gripper_closedness_action": lambda t, n: [REL[n][t]]}
    write_from_features(src, "fractal20220817_data",
                        features_json(shared_samples, "fractal20220817_data"), [5, 4],
                        overrides=overrides)  # fmt: skip
    write_from_features(src, "taco_play", features_json(shared_samples, "taco_play"), [6, 3])
    return src


def test_the_stage_is_opt_in_and_rebuilt_only_when_its_ted_changes(
    warehouse_env, oxe_folder, monkeypatch, capsys
):
    assert "openx_standardized" not in stage_assets("openx", None)
    assert stage_assets("openx", "standardized")[-1] == "openx_standardized"
    monkeypatch.setenv("OPENX_URL", str(oxe_folder))
    for name in ("fractal20220817_data", "taco_play"):
        assert main(["materialize", "openx", name, "--through", "standardized"]) == 0
    layout = WarehouseLayout.local(warehouse_env)
    folder = layout.standardized_dir("openx", "taco_play")
    first = json.loads((folder / "meta.json").read_text())["version"]
    td = open_standardized("openx", "taco_play", root=warehouse_env)
    assert td["action"].shape == (9, 7) and td["observation", "state"].shape == (9, 7)
    capsys.readouterr()
    assert main(["materialize", "openx", "taco_play", "--through", "standardized"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert json.loads((folder / "meta.json").read_text())["version"] == first

    # SQL: a weight column over the catalog's episodes table
    weights = mixture_weights(
        "SELECT DISTINCT source, partition, "
        "CASE WHEN partition = 'taco_play' THEN 2.0 ELSE 1.0 END AS weight "
        "FROM episodes WHERE source = 'openx'",
        root=warehouse_env,
    )
    frac, taco = 1.0 * 9, 2.0 * 9
    assert weights == pytest.approx({"fractal20220817_data": frac / (frac + taco),
                                     "taco_play": taco / (frac + taco)})  # fmt: skip
    with pytest.raises(ConfigError, match="partition and weight"):
        mixture_weights("SELECT DISTINCT partition FROM episodes", root=warehouse_env)


def test_a_lerobot_dataset_joins_a_mixture_through_its_declared_mapping(
    warehouse_env, oxe_folder, monkeypatch, tmp_path, capsys
):
    lerobot_src = tmp_path / "lerobot"
    write_lerobot_dataset(TELEOP, lerobot_src)
    monkeypatch.setenv("LEROBOT_URL", str(lerobot_src))
    monkeypatch.setenv("OPENX_URL", str(oxe_folder))
    assert main(["materialize", "openx", "taco_play", "--through", "standardized"]) == 0
    assert main(["materialize", "lerobot", TELEOP.repo_id, "--through", "catalog"]) == 0
    capsys.readouterr()
    args = ["materialize", "lerobot", TELEOP.repo_id, "--through", "standardized"]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "has no standardized mapping" in err and "standardized_mappings.json" in err
    assert '"state": "observation/state"' in err  # the mapping to write, from its own keys

    mapping = {
        f"lerobot:{TELEOP.repo_id}": {
            "action": "action",
            "action_encoding": "JOINT_POS",
            "state": "observation/state",
            "views": {"primary": "observation/image/front", "wrist": "observation/image/wrist"},
        }
    }
    config = warehouse_env / "config"
    config.mkdir(exist_ok=True)
    (config / "standardized_mappings.json").write_text(json.dumps(mapping))
    assert main(args) == 0
    from episode_warehouse import open_ted

    ted = open_ted("lerobot", TELEOP.repo_id, root=warehouse_env)
    td = open_standardized("lerobot", TELEOP.repo_id, root=warehouse_env)
    assert np.array_equal(td["action"].numpy(), ted["action"].numpy())
    assert (td["observation", "image", "wrist"] == ted["observation", "image", "wrist"]).all()
    stats = dataset_statistics("lerobot", TELEOP.repo_id, root=warehouse_env)
    assert stats["num_trajectories"] == len(TELEOP.lengths)

    name = f"lerobot:{TELEOP.repo_id}"
    mix = [("taco_play", 1.0), (name, 1.0)]
    ds = VLADataset(mix, warehouse_env, image_sizes={"primary": (32, 32), "wrist": (16, 16)},
                    chunk=4, num_samples=32)  # fmt: skip
    batch = ted_collate(list(ds))
    from torchrl.data.vla import validate_vla_tensordict

    assert validate_vla_tensordict(batch) == []
    assert {*batch["dataset_name"]} == {"taco_play", name}
    assert batch["action"].shape[-1] == 7  # taco 7-D; the arm's 6 joints padded
    arm = np.array([n == name for n in batch["dataset_name"]])
    assert batch["action_dim_is_pad"][arm][:, -1].all()
    assert not batch["action_dim_is_pad"][~arm].any()
