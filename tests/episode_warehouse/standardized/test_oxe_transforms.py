"""Every OXE dataset whose real features.json the TFDS authors keep (22), written with gripper
sequences that exercise each relabelling rule, built through the real stages and standardized;
the expected actions, states and instructions are written here from Octo's transform
definitions (``oxe_standardization_transforms.py``) over the values the fixture wrote, with the
gripper columns as literals worked out by hand from ``data_utils.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from episode_warehouse.standardized import open_standardized
from episode_warehouse.standardized.gripper import (
    binarize_gripper_actions,
    rel2abs_gripper_actions,
)
from tests.episode_warehouse.standardized.conftest import REL, G

# relative gripper commands (+1 close, -1 open) and the absolute state Octo's scan gives:
# 5 steps: close at 1, open at 3; the state before the first command is open
ABS = {5: [1, 0, 0, 1, 1], 4: [0, 1, 1, 0]}  # 4 steps: the first command opens: started closed
RAW = {5: [-0.5, 0.2, 1.5, 1.0, 0.0], 4: [-0.5, 0.2, 1.5, 1.0]}  # a continuous gripper value
CLIPPED = {n: np.clip(v, 0, 1).tolist() for n, v in RAW.items()}
INVERTED_CLIPPED = {n: (1 - np.clip(v, 0, 1)).tolist() for n, v in RAW.items()}
INVERTED = {n: (1 - np.array(v)).tolist() for n, v in RAW.items()}
LENGTHS = [5, 4]


def _at(tree, path):
    """A value by a '/' path, whether features.json nests it or names it with the '/'."""
    if path in tree:
        return tree[path]
    head, rest = path.split("/", 1)
    return _at(tree[head], rest)


def obs(ep, name):
    return np.stack([np.asarray(_at(s["observation"], name), np.float32) for s in ep["steps"]])


def act(ep, name=None):
    return np.stack([np.asarray(s["action"] if name is None else _at(s["action"], name),
                                np.float32) for s in ep["steps"]])  # fmt: skip


def col(values):
    return np.asarray(values, np.float32)[:, None]


def flat_action(width, gripper_at=-1, table=RAW):
    """A flat action whose gripper dimension follows ``table`` and the rest counts up."""

    def make(t, n):
        row = np.arange(width, dtype=np.float32) * 0.1 + t
        row[gripper_at] = table[n][t]
        return row

    return {"action": make}


G_SCALAR = {"action/gripper_closedness_action": lambda t, n: REL[n][t]}
G_RAW = {"action/gripper_closedness_action": lambda t, n: [RAW[n][t]]}
G_RAW_SCALAR = {"action/gripper_closedness_action": lambda t, n: RAW[n][t]}


def wrd(ep):
    return act(ep, "world_vector")


def rot(ep):
    return act(ep, "rotation_delta")


def n_(ep):
    return len(ep["steps"])


# name -> (overrides, expected action, expected state or None, instruction blanked)
CASES = {
    "fractal20220817_data": (
        G,
        lambda e: np.c_[wrd(e), rot(e), col(ABS[n_(e)])],
        lambda e: np.c_[obs(e, "base_pose_tool_reached"), obs(e, "gripper_closed")],
        False,
    ),
    "kuka": (
        G,
        lambda e: np.c_[wrd(e), rot(e), col(ABS[n_(e)])],
        lambda e: np.c_[
            obs(e, "clip_function_input/base_pose_tool_reached"),
            obs(e, "gripper_closed"),
        ],
        True,
    ),
    "jaco_play": (
        G,
        lambda e: np.c_[wrd(e), np.zeros_like(wrd(e)), col(ABS[n_(e)])],
        lambda e: obs(e, "end_effector_cartesian_pos"),
        False,
    ),
    "berkeley_cable_routing": (
        {},
        lambda e: np.c_[wrd(e), rot(e), np.zeros((n_(e), 1))],
        lambda e: obs(e, "robot_state"),
        True,
    ),
    "roboturk": (
        G_RAW,
        lambda e: np.c_[wrd(e), rot(e), col(INVERTED_CLIPPED[n_(e)])],
        None,
        True,
    ),  # fmt: skip
    "nyu_door_opening_surprising_effectiveness": (
        G,
        lambda e: np.c_[wrd(e), rot(e), col(ABS[n_(e)])],
        None,
        True,
    ),  # fmt: skip
    "viola": (
        G_RAW_SCALAR,
        lambda e: np.c_[wrd(e), rot(e), col(INVERTED_CLIPPED[n_(e)])],
        lambda e: np.c_[obs(e, "joint_states"), obs(e, "gripper_states")],
        True,
    ),
    "berkeley_autolab_ur5": (
        G_SCALAR,
        lambda e: np.c_[wrd(e), rot(e), col(ABS[n_(e)])],
        lambda e: obs(e, "robot_state")[:, 6:14],
        False,
    ),
    "taco_play": (
        {"action/rel_actions_world": flat_action(7)["action"]},
        lambda e: np.c_[act(e, "rel_actions_world")[:, :6], col(CLIPPED[n_(e)])],
        lambda e: np.c_[obs(e, "robot_obs")[:, :6], obs(e, "robot_obs")[:, 7:8]],
        False,
    ),
    "stanford_hydra_dataset_converted_externally_to_rlds": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED[n_(e)])],
        lambda e: np.c_[
            obs(e, "state")[:, :3], obs(e, "state")[:, 7:10], obs(e, "state")[:, -3:-2]
        ],
        True,
    ),  # fmt: skip
    "austin_buds_dataset_converted_externally_to_rlds": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED_CLIPPED[n_(e)])],
        lambda e: obs(e, "state")[:, :8],
        True,
    ),
    "austin_sailor_dataset_converted_externally_to_rlds": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED_CLIPPED[n_(e)])],
        lambda e: obs(e, "state"),
        True,
    ),
    "austin_sirius_dataset_converted_externally_to_rlds": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED_CLIPPED[n_(e)])],
        lambda e: obs(e, "state"),
        True,
    ),
    "utaustin_mutex": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED_CLIPPED[n_(e)])],
        lambda e: obs(e, "state")[:, :8],
        True,
    ),
    "nyu_franka_play_dataset_converted_externally_to_rlds": (
        flat_action(15, gripper_at=-2),
        lambda e: np.c_[act(e)[:, -8:-2], col(CLIPPED[n_(e)])],
        lambda e: obs(e, "state")[:, -6:],
        True,
    ),
    "dlr_edan_shared_control_converted_externally_to_rlds": (
        flat_action(7),
        lambda e: np.c_[act(e)[:, :6], col(INVERTED[n_(e)])],
        lambda e: obs(e, "state"),
        False,
    ),
    "ucsd_kitchen_dataset_converted_externally_to_rlds": (
        {},
        lambda e: act(e)[:, :-1],
        lambda e: obs(e, "state")[:, :7],
        False,
    ),  # fmt: skip
    "cmu_stretch": (
        {},
        lambda e: act(e)[:, :-1],
        lambda e: np.c_[obs(e, "state")[:, :3], np.zeros((n_(e), 3)), obs(e, "state")[:, -1:]],
        False,
    ),
    "berkeley_fanuc_manipulation": (
        {"observation/state": lambda t, n: np.r_[np.arange(6) * 0.1, RAW[n][t], np.zeros(6)]},
        lambda e: np.c_[act(e), col(INVERTED[n_(e)])],
        lambda e: np.c_[obs(e, "state")[:, :6], col(RAW[n_(e)])],
        False,
    ),
    "bc_z": (
        {"action/future/target_close": lambda t, n: [t % 2] + [0] * 9},
        lambda e: np.c_[
            act(e, "future/xyz_residual")[:, :3],
            act(e, "future/axis_angle_residual")[:, :3],
            col([1 - t % 2 for t in range(n_(e))]),
        ],  # fmt: skip
        lambda e: np.c_[
            obs(e, "present/xyz"), obs(e, "present/axis_angle"), obs(e, "present/sensed_close")
        ],  # fmt: skip
        False,
    ),
}


def _quat_action(t, n):
    from scipy.spatial.transform import Rotation

    q = Rotation.from_euler("xyz", [0.1 * t, -0.2, 0.3 + t * 0.05]).as_quat()  # x, y, z, w
    return np.r_[[t, 2.0 * t, -1.0], q, [RAW[n][t]]]


CASES["iamlab_cmu_pickup_insert_converted_externally_to_rlds"] = (
    {"action": _quat_action},
    lambda e: np.c_[
        act(e)[:, :3], [[0.1 * t, -0.2, 0.3 + t * 0.05] for t in range(n_(e))], col(RAW[n_(e)])
    ],  # fmt: skip
    lambda e: np.c_[obs(e, "state")[:, :7], obs(e, "state")[:, 7:8]],
    False,
)


def test_every_real_features_json_has_a_case(shared_samples):
    names = {p.name for p in (shared_samples / "oxe_features").iterdir()}
    assert names - set(CASES) == {"bridge"}  # the real bridge sample has its own test


@pytest.mark.parametrize("name", sorted(CASES))
def test_standardized_as_octo_defines_it(oxe, name):
    overrides, action, state, blank = CASES[name]
    texts = ["put the cup away", "wipe the table"]
    layout, episodes = oxe(name, LENGTHS, overrides, instructions=texts)
    td = open_standardized("openx", name, root=layout.folder)
    want_action = np.concatenate([action(e) for e in episodes]).astype(np.float32)
    np.testing.assert_allclose(td["action"].numpy(), want_action, rtol=0, atol=2e-6)
    if state is None:
        assert ("observation", "state") not in td.keys(True)
    else:
        want_state = np.concatenate([state(e) for e in episodes]).astype(np.float32)
        np.testing.assert_array_equal(td["observation", "state"].numpy(), want_state)
    want_text = ["" if blank else texts[i] for i, e in enumerate(episodes) for _ in e["steps"]]
    assert list(td["language_instruction"]) == want_text
    assert td["is_init"].nonzero().squeeze(-1).tolist() == [0, LENGTHS[0]]
    assert td["next", "done"].squeeze(-1).nonzero().squeeze(-1).tolist() == [4, 8]


def test_views_are_the_teds_frames_never_copied(oxe):
    from episode_warehouse import open_ted

    layout, _ = oxe("taco_play", LENGTHS)
    td = open_standardized("openx", "taco_play", root=layout.folder)
    ted = open_ted("openx", "taco_play", root=layout.folder)
    assert set(td["observation", "image"].keys()) == {"primary", "wrist"}
    assert td["observation", "image", "primary"].shape == (9, 3, 150, 200)
    assert (td["observation", "image", "primary"] == ted["observation", "rgb_static"]).all()
    assert (td["observation", "image", "wrist"] == ted["observation", "rgb_gripper"]).all()
    folder = layout.standardized_dir("openx", "taco_play")  # the record names the TED's file
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["views"] == {"primary": "observation/rgb_static.frames", "secondary": None,
                             "wrist": "observation/rgb_gripper.frames"}  # fmt: skip
    assert not any(p.name.startswith("rgb_static") for p in folder.rglob("*"))


def test_gripper_rules_against_their_definitions():
    # binarize: > 0.95 open, < 0.05 closed, in between takes what follows; the last value
    # starts the scan, so a trailing in-between value stays as it is (Octo's docstring)
    got = binarize_gripper_actions(np.array([1.0, 0.5, 0.0, 0.02, 0.6, 0.97, 0.5]))
    np.testing.assert_array_equal(got, np.float32([1, 0, 0, 0, 1, 1, 0.5]))
    np.testing.assert_array_equal(rel2abs_gripper_actions(np.array(REL[5])), ABS[5])
    np.testing.assert_array_equal(rel2abs_gripper_actions(np.array(REL[4])), ABS[4])
    np.testing.assert_array_equal(rel2abs_gripper_actions(np.zeros(3)), [1, 1, 1])
    # |x| <= 0.1 is no command
    np.testing.assert_array_equal(rel2abs_gripper_actions(np.array([0.1, 0.5, -0.05])), [1, 0, 0])


def test_euler_from_quaternion_against_scipy():
    from scipy.spatial.transform import Rotation

    from episode_warehouse.standardized.rotations import euler_from_quaternion

    r = Rotation.random(500, random_state=3)
    got = euler_from_quaternion(r.as_quat().astype(np.float32))
    np.testing.assert_allclose(got, r.as_euler("xyz"), atol=2e-5)
