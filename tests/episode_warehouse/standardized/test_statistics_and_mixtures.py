"""The real bridge sample through OpenVLA's bridge_oxe; statistics against numpy and Octo's
combination rule; mixtures' weights; the refusals (missing key, NaN, frames of another size,
no transform), each naming the partition and key with nothing published."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.errors import ConfigError, CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.standardized import (
    VLADataset,
    combine_dataset_statistics,
    dataset_statistics,
    mixture_weights,
    open_standardized,
)
from episode_warehouse.standardized.normalize import Normalizer
from episode_warehouse.standardized.stage import build_standardized_stage
from tests.episode_warehouse.standardized.conftest import G, build_ted


def test_the_real_bridge_sample_as_openvla_bridge_oxe(shared_samples, tmp_path):
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_ted(layout, shared_samples / "rlds", "bridge")
    build_standardized_stage(layout, "openx", "bridge", code_version="t")
    ted = open_ted("openx", "bridge", root=layout.folder)  # one episode of 3 steps
    state = ted["observation", "state"].numpy()
    opened = ted["action", "open_gripper"].numpy().astype(np.float32)
    td = open_standardized("openx", "bridge", root=layout.folder)
    # drop the first step (all-zero action), relabel from the reached state, drop the last
    assert td.batch_size[0] == 1
    want_action = np.r_[state[2, :6] - state[1, :6], opened[1]]
    np.testing.assert_array_equal(td["action"][0].numpy(), want_action.astype(np.float32))
    want_state = np.r_[state[1, :6], 0.0, state[1, -1]]  # ["EEF_state", None, "gripper_state"]
    np.testing.assert_array_equal(td["observation", "state"][0].numpy(), want_state)
    assert (td["observation", "image", "primary"][0] == ted["observation", "image"][1]).all()
    assert ("observation", "image", "secondary") not in td.keys(True)  # no image_1 in OXE's
    stats = dataset_statistics("openx", "bridge", root=layout.folder)
    assert stats["num_transitions"] == 1 and stats["num_trajectories"] == 1
    on_disk = json.loads(
        (layout.standardized_dir("openx", "bridge") / "dataset_statistics.json").read_text()
    )
    assert list(on_disk) == ["bridge"] and on_disk["bridge"] == stats  # OpenVLA's norm_stats


@pytest.fixture
def two(oxe):
    oxe("fractal20220817_data", [5, 4], G)
    layout, _ = oxe("taco_play", [6, 6, 3])
    return layout


def test_statistics_are_numpy_s_and_octo_s_combination(two):
    root = two.folder
    parts = {}
    for name in ("fractal20220817_data", "taco_play"):
        td = open_standardized("openx", name, root=root)
        stats = dataset_statistics("openx", name, root=root)
        for key, values in (("action", td["action"]), ("proprio", td["observation", "state"])):
            v = values.numpy().astype(np.float64)  # statistics in float64 (#48)
            np.testing.assert_allclose(stats[key]["mean"], v.mean(0), rtol=1e-6)
            np.testing.assert_allclose(stats[key]["std"], v.std(0), rtol=1e-5)
            np.testing.assert_array_equal(stats[key]["min"], v.min(0))
            np.testing.assert_array_equal(stats[key]["max"], v.max(0))
            np.testing.assert_allclose(stats[key]["q99"], np.quantile(v, 0.99, 0), rtol=1e-6)
            assert stats[key]["p01"] == stats[key]["q01"]
        assert stats["action"]["mask"] == [True] * 6 + [False]  # Octo's EEF_POS gripper mask
        assert stats["num_transitions"] == len(td)
        parts[name] = (stats, td["action"].numpy().astype(np.float64))
    combined = combine_dataset_statistics([s for s, _ in parts.values()])
    pooled = np.concatenate([a for _, a in parts.values()])
    np.testing.assert_allclose(combined["action"]["mean"], pooled.mean(0), rtol=1e-5)
    np.testing.assert_allclose(combined["action"]["std"], pooled.std(0), rtol=1e-5)
    np.testing.assert_allclose(combined["action"]["min"], pooled.min(0))
    assert combined["num_transitions"] == [9, 15]
    assert "proprio" not in combined  # 8-D and 7-D states are not pooled (Octo fails there)


def test_mixture_weights_balance_and_leave_out_what_is_missing(two, caplog):
    root = two.folder
    with caplog.at_level(logging.WARNING):
        weights = mixture_weights("rtx", root=root)
    frac, taco = 0.54087122203 * 9, 2.0 * 15  # weight x num_transitions
    assert weights == pytest.approx(
        {"fractal20220817_data": frac / (frac + taco), "taco_play": taco / (frac + taco)}
    )
    (warning,) = [r for r in caplog.records if "not standardized" in r.message]
    assert "kuka" in warning.message and "toto" in warning.message
    plain = mixture_weights([("taco_play", 1.0), ("fractal20220817_data", 3.0)], root,
                            balance=False)  # fmt: skip
    assert plain == pytest.approx({"taco_play": 0.25, "fractal20220817_data": 0.75})
    dup = mixture_weights([("taco_play", 1.0), ("taco_play", 5.0)], root, balance=False)
    assert dup == {"taco_play": 1.0}
    with pytest.raises(ConfigError, match="the mixture is empty"):
        mixture_weights([("kuka", 1.0)], root)
    with pytest.raises(ConfigError, match="no named mix"):
        mixture_weights("oxe_soup", root)


def test_a_constant_dimension_normalizes_to_zero_not_to_noise_over_1e_8():
    stats = {"mean": [1.0, 0.5], "std": [0.0, 0.5], "min": [1.0, 0.0], "max": [1.0, 1.0],
             "q01": [1.0, 0.0], "q99": [1.0, 1.0]}  # fmt: skip
    x = np.float32([[1.0 + 1e-7, 1.0]])
    for kind in ("normal", "bounds_q99"):
        got = Normalizer.of(stats, kind)(x)
        assert got[0, 0] == 0.0 and np.isfinite(got).all()
    np.testing.assert_allclose(Normalizer.of(stats, "normal")(x)[0, 1], 1.0, rtol=1e-6)
    np.testing.assert_allclose(Normalizer.of(stats, "bounds_q99")(x)[0, 1], 1.0, rtol=1e-6)


def _nothing_published(layout, name):
    return not (layout.standardized_dir("openx", name) / "meta.json").exists()


def test_a_missing_key_is_named(oxe, shared_samples, tmp_path):
    from tests.episode_warehouse.standardized.conftest import features_json
    from warehouse_fixtures.oxe_from_features import write_from_features

    layout = WarehouseLayout.local(tmp_path / "wh2")
    write_from_features(tmp_path / "src2", "fractal20220817_data",
                        features_json(shared_samples, "fractal20220817_data"), [4],
                        drop=("observation/gripper_closed",))  # fmt: skip
    build_ted(layout, tmp_path / "src2", "fractal20220817_data")
    with pytest.raises(CorruptInputError, match="observation/gripper_closed") as error:
        build_standardized_stage(layout, "openx", "fractal20220817_data", code_version="t")
    assert "openx fractal20220817_data episode 0" in str(error.value)
    assert _nothing_published(layout, "fractal20220817_data")


def test_a_nan_action_is_named(oxe):
    # the decoded stage refuses it first, naming the key and the step
    nan = {**G, "action/world_vector": lambda t, n: [0.1, np.nan if t == 2 else 0.2, 0.3]}
    with pytest.raises(CorruptInputError, match="action/world_vector is nan at episode 0.* step 2"):
        oxe("fractal20220817_data", [5], nan, standardize=False)
    # and a transform's own result is checked too (a mapped source, a degenerate quaternion)
    from episode_warehouse.standardized.transforms import TRANSFORMS, Trajectory, checked

    values = {
        "action/world_vector": np.float32([[0, 0, 0], [np.inf, 0, 0]]),
        "action/rotation_delta": np.zeros((2, 3), np.float32),
        "action/gripper_closedness_action": np.zeros((2, 1), np.float32),
        "observation/base_pose_tool_reached": np.zeros((2, 7), np.float32),
        "observation/gripper_closed": np.zeros((2, 1), np.float32),
    }
    tr = Trajectory(values.get, 2, np.array(["", ""], object), "openx x episode 3")
    with pytest.raises(CorruptInputError, match="action is not finite at kept step 1") as error:
        checked("fractal20220817_data", TRANSFORMS["fractal20220817_data"], tr)
    assert error.value.subject == "openx x episode 3"


def test_a_frame_of_another_size_is_refused_with_its_key(oxe):
    def frames(t, n):
        h, w = (150, 200) if t != 1 else (100, 200)
        return np.zeros((h, w, 3), np.uint8)

    with pytest.raises(CorruptInputError, match="rgb_static step 1 has height 100"):
        oxe("taco_play", [3], {"observation/rgb_static": frames})


def test_a_dataset_octo_has_no_transform_for_is_refused_by_name(oxe, shared_samples, tmp_path):
    from tests.episode_warehouse.standardized.conftest import features_json
    from warehouse_fixtures.oxe_from_features import write_from_features

    layout = WarehouseLayout.local(tmp_path / "wh3")
    write_from_features(tmp_path / "src3", "usc_cloth_sim_converted_externally_to_rlds",
                        features_json(shared_samples, "cmu_stretch"), [3])  # fmt: skip
    build_ted(layout, tmp_path / "src3", "usc_cloth_sim_converted_externally_to_rlds")
    with pytest.raises(ConfigError, match="Octo has no standardization transform") as error:
        build_standardized_stage(layout, "openx", "usc_cloth_sim_converted_externally_to_rlds",
                                 code_version="t")  # fmt: skip
    assert "fractal20220817_data" in error.value.fix


def _strict(text: str):
    """JSON as the standard demands it: Infinity and NaN are no JSON values."""

    def refuse(name):
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_statistics_of_huge_values_are_computed_in_float64(oxe):
    """#48: float32 statistics of a state dimension alternating 0 and 1e20 published
    ``std: Infinity`` (true value 5e19), and ``normal`` normalization zeroed the dimension."""
    pose = {**G, "observation/base_pose_tool_reached":
            lambda t, n: [1e20 if t % 2 else 0.0, 0.1, 0.2, 0.0, 0.0, 0.0, 1.0]}  # fmt: skip
    layout, _ = oxe("fractal20220817_data", [4], pose)
    path = layout.standardized_dir("openx", "fractal20220817_data") / "dataset_statistics.json"
    stats = _strict(path.read_text())["fractal20220817_data"]["proprio"]
    values = np.float64(np.float32([0.0, 1e20, 0.0, 1e20]))  # as the TED holds them
    assert stats["mean"][0] == pytest.approx(values.mean(), rel=1e-12)
    assert stats["std"][0] == pytest.approx(values.std(), rel=1e-12)  # 5e19
    ds = VLADataset([("fractal20220817_data", 1.0)], layout.folder, normalization="normal")
    states = [float(ds.item(0, row)["observation", "state"][-1, 0]) for row in range(4)]
    assert states == pytest.approx([-1.0, 1.0, -1.0, 1.0], rel=1e-6)  # not zeroed


def test_statistics_that_are_not_finite_are_refused_by_key_and_dimension():
    from episode_warehouse.standardized.statistics import octo_statistics

    state = np.zeros((4, 3))
    state[1::2, 2] = 1e200  # its variance overflows float64
    with pytest.raises(CorruptInputError, match="proprio statistic 'std' of dimension 2") as e:
        octo_statistics(np.zeros((4, 2)), state, episodes=1, action_mask=[True, True],
                        subject="openx:x")  # fmt: skip
    assert e.value.subject == "openx:x" and "dimension 2 of the state" in e.value.fix


@pytest.mark.integration  # the SQL sandbox is a child process
def test_weights_are_checked_in_every_form_and_named(two, tmp_path):
    """#48: from SQL inf or 1e308 gave NaN weights, negative/NaN/-inf rows were dropped
    silently, NULL or text raised TypeError/ValueError; lists accepted inf; a mix starting
    with WITH or FROM was "no named mix"."""
    from episode_warehouse.stages import publish_catalog_rows
    from episode_warehouse.standardized.export import export_mixture

    root = two.folder
    for name in ("fractal20220817_data", "taco_play"):
        publish_catalog_rows(two, "openx", name, code_version="t", run_id="r")
    other = "SELECT DISTINCT partition, 1 AS weight FROM episodes WHERE partition = 'taco_play'"
    for bad in ("'inf'::DOUBLE", "'-inf'::DOUBLE", "'nan'::DOUBLE", "-1.0", "0", "NULL", "'2'"):
        sql = (f"SELECT DISTINCT partition, {bad} AS weight FROM episodes "
               f"WHERE partition = 'fractal20220817_data' UNION ALL {other}")  # fmt: skip
        with pytest.raises(ConfigError, match=r"weight of openx:\w+ is") as e:
            mixture_weights(sql, root)
        assert "above 0" in e.value.fix, bad
    for bad in (float("inf"), float("nan"), -2.0, 0, "1", None, True):
        with pytest.raises(ConfigError, match="the weight of 'taco_play' is"):
            mixture_weights([("taco_play", bad), ("fractal20220817_data", 1.0)], root)
    with pytest.raises(ConfigError, match="the weight of 'taco_play' is inf"):
        export_mixture([("taco_play", float("inf"))], "inf_mix", root=root)
    assert not (root / "lerobot" / "inf_mix").exists()
    # huge but finite weights are weights: balanced without overflowing to NaN
    huge = mixture_weights([("taco_play", 1e308), ("fractal20220817_data", 1e308)], root)
    assert huge == pytest.approx({"taco_play": 15 / 24, "fractal20220817_data": 9 / 24})
    # SQL may start with WITH or FROM (DuckDB's FROM-first form); DECIMAL weights are numbers
    want = mixture_weights([("taco_play", 2.0), ("fractal20220817_data", 1.0)], root)
    for sql in (
        "WITH w AS (SELECT DISTINCT partition, IF(partition = 'taco_play', 2.0, 1.0) AS weight "
        "FROM episodes) SELECT * FROM w",
        "FROM episodes SELECT DISTINCT partition, IF(partition = 'taco_play', 2.0, 1.0) AS weight",
        "  from episodes select distinct partition, if(partition = 'taco_play', 2, 1) as weight",
    ):
        assert mixture_weights(sql, root) == pytest.approx(want), sql
