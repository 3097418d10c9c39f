"""The worked trainers in examples/ run on a warehouse, their loss falls, and the behaviour
cloning run resumed mid-epoch trains on exactly the batches an uninterrupted run does."""

from __future__ import annotations

import numpy as np
import pytest

from examples import bc_robot, dqn_atari
from tests.helpers import build_atari, build_openx
from warehouse_fixtures.openx_writer import DatasetSpec


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("trainers") / "wh"
    build_atari(root, "Pong/1", 1, capacity=400, episodes=10, lengths=(60, 200))
    build_atari(root, "Pong/2", 2, capacity=400, episodes=10, lengths=(60, 200))
    spec = DatasetSpec("bridge", cameras=("image", "wrist_image"), image_size=32,
                       image_format="JPEG", state_dim=7, action_dim=7)  # fmt: skip
    build_openx(root, spec, [[30, 35, 20, 45], [40, 25]], seed=1)
    return root


def _falls(losses, n=10):
    return np.mean(losses[-n:]) < np.mean(losses[:n])


def test_offline_dqn_on_atari(root, capsys):
    out = dqn_atari.main(["--root", str(root), "--steps", "40", "--batch", "64",
                          "--log-every", "20"])  # fmt: skip
    assert len(out["losses"]) == 40 and np.isfinite(out["losses"]).all()
    assert _falls(out["losses"])
    assert out["samples_per_s"] > 0 and 0 <= out["data_wait"] < 1
    printed = capsys.readouterr().out
    assert "samples/s" in printed and "waiting for data" in printed


def test_behaviour_cloning_resumes_mid_epoch(root, tmp_path):
    common = ["--root", str(root), "--steps", "36", "--steps-per-epoch", "15", "--batch", "32",
              "--log-every", "12"]  # fmt: skip
    whole = bc_robot.main(common)
    assert _falls(whole["losses"])
    state = tmp_path / "bc.pt"
    first = bc_robot.main([*common, "--state", str(state), "--stop-after", "20"])  # epoch 1, mid
    assert len(first["losses"]) == 20 and state.exists()
    rest = bc_robot.main([*common, "--state", str(state)])
    assert len(rest["losses"]) == 16
    assert first["trained_on"] + rest["trained_on"] == whole["trained_on"]  # the same batches
    np.testing.assert_allclose(first["losses"] + rest["losses"], whole["losses"], rtol=1e-3)


def test_behaviour_cloning_with_dataloader_workers(root):
    out = bc_robot.main(["--root", str(root), "--steps", "6", "--steps-per-epoch", "3",
                         "--batch", "16", "--workers", "2"])  # fmt: skip
    assert len(out["losses"]) == 6


def test_behaviour_cloning_on_the_real_bridge_sample(shared_samples, tmp_path):
    """#43: the example crashed on OXE's real bridge (``no key 'action'``: its action is a dict
    of world_vector, rotation_delta, open_gripper, terminate_episode); it trains on what the
    data has."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows

    layout = WarehouseLayout.local(tmp_path / "wh")
    mirror_openx(str(shared_samples / "rlds"), "bridge", layout.raw_dir("openx", "bridge"),
                 root=layout.root, code_version="t")  # fmt: skip
    decode_openx(layout, "bridge", code_version="t")
    build_ted_stage(layout, "openx", "bridge", code_version="t")
    publish_catalog_rows(layout, "openx", "bridge", code_version="t", run_id="r")
    out = bc_robot.main(["--root", str(layout.folder), "--partition", "bridge", "--steps", "4",
                         "--steps-per-epoch", "2", "--batch", "2", "--chunk", "2",
                         "--log-every", "2"])  # fmt: skip
    assert len(out["losses"]) == 4 and np.isfinite(out["losses"]).all()


MIX = ["fractal20220817_data", "taco_play", "viola", "berkeley_autolab_ur5"]


@pytest.fixture(scope="module")
def mixture(shared_samples, tmp_path_factory):
    """Four OXE datasets written by `warehouse write-oxe` (the real features.json, smooth
    learnable states and actions), through the real stages to standardized partitions."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages import publish_catalog_rows
    from episode_warehouse.standardized.stage import build_standardized_stage
    from tests.episode_warehouse.standardized.conftest import build_ted
    from warehouse_cli.oxe_folders import write_oxe_folders

    base = tmp_path_factory.mktemp("mixture")
    write_oxe_folders(base / "src", MIX, episodes=3, steps=24,
                      features=shared_samples / "oxe_features")  # fmt: skip
    layout = WarehouseLayout.local(base / "wh")
    for name in MIX:
        build_ted(layout, base / "src", name)
        publish_catalog_rows(layout, "openx", name, code_version="t", run_id="r")
        build_standardized_stage(layout, "openx", name, code_version="t")
    return layout.folder


def test_behaviour_cloning_on_a_vla_mixture_learns_and_resumes(mixture, tmp_path):
    """#48: the example trains on a VLADataset mixture of four robots; on data whose actions
    follow the states its loss falls (0.85 to 0.61 in 60 steps here), and a resumed run
    continues."""
    common = ["--root", str(mixture), "--mix", ",".join(MIX), "--steps", "60",
              "--steps-per-epoch", "20", "--batch", "32", "--chunk", "4", "--image-size", "32",
              "--lr", "3e-3", "--log-every", "20"]  # fmt: skip
    out = bc_robot.main(common)
    assert len(out["losses"]) == 60 and np.isfinite(out["losses"]).all()
    assert np.mean(out["losses"][-10:]) < 0.8 * np.mean(out["losses"][:10])
    state = tmp_path / "mix.pt"
    first = bc_robot.main([*common, "--state", str(state), "--stop-after", "25"])
    rest = bc_robot.main([*common, "--state", str(state)])
    assert len(first["losses"]) == 25 and len(rest["losses"]) == 35


def test_integer_action_leaves_are_normalized(mixture):
    """fractal's terminate_episode is int32: it is normalized with the float leaves (bools
    alone stay 0/1), so it cannot dominate the loss."""
    out = bc_robot.main(["--root", str(mixture), "--partition", "fractal20220817_data",
                         "--steps", "4", "--steps-per-epoch", "2", "--batch", "4", "--chunk", "2",
                         "--log-every", "2"])  # fmt: skip
    assert ("action", "terminate_episode") in out["normalized"]
    assert np.isfinite(out["losses"]).all()


def test_write_oxe_names_unknown_datasets(shared_samples, tmp_path, capsys):
    from warehouse_cli.main import main

    features = ["--features", str(shared_samples / "oxe_features")]
    assert main(["write-oxe", str(tmp_path / "o"), "--datasets", "tacoplay", *features]) == 2
    err = capsys.readouterr().err
    assert "did you mean taco_play" in err and not (tmp_path / "o").exists()
    assert main(["write-oxe", str(tmp_path / "o"), "--datasets", "viola", "--episodes", "1",
                 "--steps", "3", *features]) == 0  # fmt: skip
    assert (tmp_path / "o" / "viola" / "0.1.0" / "features.json").is_file()
