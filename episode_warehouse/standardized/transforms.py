"""Octo's standardization transforms (``octo/data/oxe/oxe_standardization_transforms.py``) and
OpenVLA's ``bridge_oxe`` and ``droid_baseact_transform`` (``prismatic/vla/datasets/rlds/oxe/
transforms.py``; Octo configures no DROID), one episode at a time, in numpy.

Each transform reads one episode of a TED (:class:`Trajectory`, keys as TED paths such as
``"action/world_vector"``) and returns its :class:`Standard` steps: the 7-D (or 8-D joint)
``action`` with 1 = open gripper, the proprio ``state`` (``None`` where Octo has none), the
instruction of each step ("" where Octo blanks it as uninformative), and which of the
episode's steps are kept (``relabel_actions`` drops the last one, ``bridge_oxe`` also the first,
``berkeley_rpt`` keeps every third).

Where Octo's code cannot run as written, the evident intent is kept and said so here:
``robo_net``'s state concatenation lacks its axis (a TypeError in TensorFlow; here axis -1),
and ``utokyo_xarm_pick_and_place`` sets no proprio (Octo fails with ``load_proprio``; here it
has no state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import ConfigError, CorruptInputError
from episode_warehouse.standardized.gripper import (
    binarize_gripper_actions,
    clip01,
    invert_gripper_actions,
    rel2abs_gripper_actions,
)
from episode_warehouse.standardized.rotations import euler_from_quaternion

# Bump when a transform's output changes: every standardized partition then rebuilds.
TRANSFORMS_VERSION = 1


class Trajectory:
    """One episode's step values, read by TED path on demand."""

    def __init__(self, read: Callable[[str], np.ndarray | None], length: int,
                 instruction: np.ndarray, subject: str) -> None:  # fmt: skip
        self._read = read
        self.length = length
        self.instruction = instruction  # str per step
        self.subject = subject

    def __call__(self, path: str) -> np.ndarray:
        value = self._read(path)
        if value is None:
            raise CorruptInputError(
                f"the transform needs the key {path!r}, which this dataset's TED does not have",
                subject=self.subject,
                fix="this folder is not the dataset the transform was written for; "
                "check the dataset id and its features.json",
            )
        return value


@dataclass(frozen=True)
class Standard:
    action: np.ndarray  # float32 [T', A]
    state: np.ndarray | None  # float32 [T', S]
    instruction: np.ndarray  # str [T']
    keep: np.ndarray  # int64 [T']: the episode's steps these are


def f32(*parts: np.ndarray) -> np.ndarray:
    """Octo's ``tf.concat(..., axis=-1)`` then ``tf.cast(float32)``."""
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], axis=-1)


def _out(tr: Trajectory, action, state=None, *, blank: bool = False, keep=None) -> Standard:
    keep = np.arange(tr.length) if keep is None else np.asarray(keep, dtype=np.int64)
    instruction = tr.instruction[keep] if not blank else np.full(len(keep), "", dtype=object)
    return Standard(
        np.asarray(action, np.float32),
        None if state is None else np.asarray(state, np.float32),
        instruction,
        keep,
    )


def _zeros(x: np.ndarray) -> np.ndarray:
    return np.zeros_like(x, dtype=np.float32)


def relabelled(tr: Trajectory, action: np.ndarray, state: np.ndarray, keep: np.ndarray):
    """Octo's ``relabel_actions``: movement = the reached state's first 6 dims' change; the
    last step (no next state) is dropped. Returns (action, kept step indices)."""
    movement = state[1:, :6] - state[:-1, :6]
    return f32(movement, action[:-1, -1:]), keep[:-1]


# -- the transforms ------------------------------------------------------------------------------


def bridge_oxe(tr: Trajectory) -> Standard:
    keep = np.arange(1, tr.length)  # the first step's action is all zeros: dropped
    state = tr("observation/state")[1:]
    action = f32(
        tr("action/world_vector")[1:],
        tr("action/rotation_delta")[1:],
        tr("action/open_gripper")[1:, None],
    )
    action, keep = relabelled(tr, action, state, keep)
    state = state[:-1]
    # OpenVLA's state_obs_keys ["EEF_state", None, "gripper_state"]: one zero of padding
    return _out(tr, action, f32(state[:, :6], np.zeros((len(state), 1)), state[:, -1:]), keep=keep)


def bridge_dataset(tr: Trajectory) -> Standard:
    """Octo's own copy of Bridge V2 (rail.eecs.berkeley.edu, not an OXE folder), when a
    warehouse mirrors it under its Octo name."""
    a, state = tr("action"), tr("observation/state")
    action = f32(a[:, :6], binarize_gripper_actions(a[:, -1])[:, None])
    action, keep = relabelled(tr, action, state, np.arange(tr.length))
    return _out(tr, action, state[:-1], keep=keep)


def _rt1_like(tr: Trajectory) -> np.ndarray:
    gripper = rel2abs_gripper_actions(tr("action/gripper_closedness_action")[:, 0])
    return f32(tr("action/world_vector"), tr("action/rotation_delta"), gripper[:, None])


def rt1(tr):
    state = f32(tr("observation/base_pose_tool_reached"), tr("observation/gripper_closed"))
    return _out(tr, _rt1_like(tr), state)


def kuka(tr):
    # TFDS decodes the zlib-encoded tensors (features.json: float32, encoding zlib) as it reads
    # them; Octo's decode_compressed is the same step on the undecoded bytes
    eef = tr("observation/clip_function_input/base_pose_tool_reached").reshape(-1, 7)
    gripper = tr("observation/gripper_closed").reshape(-1, 1)
    return _out(tr, _rt1_like(tr), f32(eef, gripper), blank=True)


def taco_play(tr):
    action = tr("action/rel_actions_world")
    obs = tr("observation/robot_obs")
    return _out(tr, f32(action[:, :6], clip01(action[:, -1:])), f32(obs[:, :6], obs[:, 7:8]))


def jaco_play(tr):
    gripper = rel2abs_gripper_actions(tr("action/gripper_closedness_action")[:, 0])
    world = tr("action/world_vector")
    return _out(tr, f32(world, _zeros(world), gripper[:, None]),
                tr("observation/end_effector_cartesian_pos"))  # fmt: skip


def berkeley_cable_routing(tr):
    world = tr("action/world_vector")
    action = f32(world, tr("action/rotation_delta"), _zeros(world[:, :1]))
    return _out(tr, action, tr("observation/robot_state"), blank=True)


def roboturk(tr):
    gripper = invert_gripper_actions(clip01(tr("action/gripper_closedness_action")))
    action = f32(tr("action/world_vector"), tr("action/rotation_delta"), gripper)
    return _out(tr, action, None, blank=True)  # Octo: "no proprio provided"


def nyu_door_opening(tr):
    return _out(tr, _rt1_like(tr), None, blank=True)


def viola(tr):
    gripper = invert_gripper_actions(clip01(tr("action/gripper_closedness_action")[:, None]))
    action = f32(tr("action/world_vector"), tr("action/rotation_delta"), gripper)
    state = f32(tr("observation/joint_states"), tr("observation/gripper_states"))
    return _out(tr, action, state, blank=True)


def berkeley_autolab_ur5(tr):
    gripper = rel2abs_gripper_actions(tr("action/gripper_closedness_action"))
    action = f32(tr("action/world_vector"), tr("action/rotation_delta"), gripper[:, None])
    return _out(tr, action, tr("observation/robot_state")[:, 6:14])


def toto(tr):
    action = f32(
        tr("action/world_vector"), tr("action/rotation_delta"), tr("action/open_gripper")[:, None]
    )
    return _out(tr, action, tr("observation/state"), blank=True)


def language_table(tr):
    action = tr("action")
    action = f32(action, _zeros(action), _zeros(action), np.ones_like(action[:, :1]))
    codes = tr("observation/instruction")  # unicode code points, zero padded
    texts = np.array(
        ["".join(map(chr, row)).split("\x00")[0] for row in codes.astype(np.int64)], dtype=object
    )
    out = _out(tr, action, tr("observation/effector_translation"))
    return Standard(out.action, out.state, texts, out.keep)


def pusht(tr):
    action = f32(tr("action/world_vector"), tr("action/rotation_delta"),
                 tr("action/gripper_closedness_action")[:, None])  # fmt: skip
    return _out(tr, action, tr("observation/robot_state"))


def stanford_kuka_multimodal(tr):
    a = tr("action")
    state = f32(tr("observation/ee_position"), tr("observation/ee_orientation"))
    return _out(tr, f32(a[:, :3], _zeros(a[:, :3]), a[:, -1:]), state)


def nyu_rot(tr):
    return _out(tr, tr("action")[..., :7], tr("observation/state"))


def stanford_hydra(tr):
    a, s = tr("action"), tr("observation/state")
    action = f32(a[:, :6], invert_gripper_actions(a[:, -1:]))
    return _out(tr, action, f32(s[:, :3], s[:, 7:10], s[:, -3:-2]), blank=True)


def _inverted_clipped(tr: Trajectory) -> np.ndarray:
    a = tr("action")
    return f32(a[:, :6], invert_gripper_actions(clip01(a[:, -1:])))


def austin_buds(tr):
    return _out(tr, _inverted_clipped(tr), tr("observation/state")[:, :8], blank=True)


def nyu_franka_play(tr):
    a = tr("action")
    action = f32(a[:, -8:-2], clip01(a[:, -2:-1]))
    return _out(tr, action, tr("observation/state")[:, -6:], blank=True)


def maniskill(tr):
    state = f32(tr("observation/tcp_pose"), tr("observation/state")[:, 7:8])
    return _out(tr, tr("action"), state)


def furniture_bench(tr):
    a, s = tr("action"), tr("observation/state")
    action = f32(a[:, :3], euler_from_quaternion(a[:, 3:7]),
                 invert_gripper_actions(clip01(a[:, -1:])))  # fmt: skip
    return _out(tr, action, f32(s[:, :7], s[:, -1:]))


def _drop_last_dim_no_state(tr):
    return _out(tr, tr("action")[..., :-1], None)


def ucsd_kitchen(tr):
    return _out(tr, tr("action")[..., :-1], tr("observation/state")[:, :7])


def ucsd_pick_place(tr):
    a = tr("action")
    return _out(tr, f32(a[:, :3], _zeros(a[:, :3]), a[:, -1:]), tr("observation/state"))


def austin_sailor_sirius(tr):
    return _out(tr, _inverted_clipped(tr), tr("observation/state"), blank=True)


def bc_z(tr):
    action = f32(
        tr("action/future/xyz_residual")[:, :3],
        tr("action/future/axis_angle_residual")[:, :3],
        invert_gripper_actions(tr("action/future/target_close")[:, :1].astype(np.float32)),
    )
    state = f32(tr("observation/present/xyz"), tr("observation/present/axis_angle"),
                tr("observation/present/sensed_close"))  # fmt: skip
    return _out(tr, action, state)


def drop_last_action_dim(tr):
    return _out(tr, tr("action")[..., :-1], tr("observation/state"))


def utokyo_xarm_pick_place(tr):
    return _out(tr, tr("action"), None)


def utokyo_xarm_bimanual(tr):
    return _out(tr, tr("action")[..., -7:], tr("observation/end_effector_pose"))


def robo_net(tr):
    a, s = tr("action"), tr("observation/state")
    action = f32(a[:, :4], _zeros(a[:, :2]), a[:, -1:])
    return _out(tr, action, f32(s[:, :4], _zeros(s[:, :2]), s[:, -1:]))


def berkeley_mvp(tr):
    a = tr("action")
    state = f32(tr("observation/pose"), tr("observation/gripper").astype(np.float32)[:, None])
    return _out(tr, f32(a[:, :-1], invert_gripper_actions(a[:, -1:])), state)


def berkeley_rpt(tr):
    keep = np.arange(0, tr.length, 3)  # 30 Hz to 10 Hz
    joints = tr("observation/joint_pos")[keep]
    gripper = tr("observation/gripper")[keep].astype(np.float32)[:, None]
    action = f32(joints[1:, :7] - joints[:-1, :7],
                 invert_gripper_actions(tr("action")[keep][:-1, -1:]))  # fmt: skip
    return _out(tr, action, f32(joints, gripper)[:-1], keep=keep[:-1])


def kaist_nonprehensile(tr):
    a = tr("action")
    return _out(tr, f32(a[:, :6], _zeros(a[:, :1])), tr("observation/state")[:, -7:])


def stanford_mask_vit(tr):
    a, p = tr("action"), tr("observation/end_effector_pose")
    return _out(tr, f32(a[:, :4], _zeros(a[:, :2]), a[:, -1:]),
                f32(p[:, :4], _zeros(p[:, :2]), p[:, -1:]))  # fmt: skip


def tokyo_lsmo(tr):
    s = tr("observation/state")
    return _out(tr, tr("action"), f32(s[:, :6], s[:, -1:]))


def state_as_is(tr):
    return _out(tr, tr("action"), tr("observation/state"))


def dlr_sara_grid_clamp(tr):
    return _out(tr, tr("action"), tr("observation/state")[:, :6])


def dlr_edan_shared_control(tr):
    a = tr("action")
    return _out(tr, f32(a[:, :6], invert_gripper_actions(a[:, -1:])), tr("observation/state"))


def asu_table_top(tr):
    state = f32(tr("ground_truth_states/EE"), tr("observation/state")[:, -1:])
    return _out(tr, tr("action"), state)


def iamlab_pick_insert(tr):
    a, s = tr("action"), tr("observation/state")
    action = f32(a[:, :3], euler_from_quaternion(a[:, 3:7]), a[:, 7:8])
    return _out(tr, action, f32(s[:, :7], s[:, 7:8]))


def uiuc_d3field(tr):
    a = tr("action")
    return _out(tr, f32(a, _zeros(a), _zeros(a[:, :1])), None)


def utaustin_mutex(tr):
    return _out(tr, _inverted_clipped(tr), tr("observation/state")[:, :8], blank=True)


def berkeley_fanuc(tr):
    s = tr("observation/state")
    # no gripper action stored: the gripper state, inverted so that 1 is open
    return _out(tr, f32(tr("action"), invert_gripper_actions(s[:, 6:7])),
                f32(s[:, :6], s[:, 6:7]))  # fmt: skip


def cmu_playing_with_food(tr):
    a = tr("action")
    action = f32(a[:, :3], euler_from_quaternion(a[:, 3:7]), a[:, -1:])
    return _out(tr, action, tr("observation/state"))


def cmu_play_fusion(tr):
    a = tr("action")
    return _out(tr, f32(a[:, :3], a[:, -4:]), tr("observation/state"))


def droid(tr):
    """OpenVLA's ``droid_baseact_transform``: the base-frame cartesian velocity and 1 - the
    gripper position; proprio is the cartesian position and the gripper position. Its random
    swap of the two exterior cameras is a training-time augmentation, not standardization:
    the views keep the published order here."""
    action = f32(tr("action_dict/cartesian_velocity")[:, :6],
                 1 - tr("action_dict/gripper_position"))  # fmt: skip
    state = f32(tr("observation/cartesian_position"), tr("observation/gripper_position"))
    return _out(tr, action, state)


def cmu_stretch(tr):
    s = tr("observation/state")
    return _out(tr, tr("action")[..., :-1], f32(s[:, :3], _zeros(s[:, :3]), s[:, -1:]))


TRANSFORMS: dict[str, Callable[[Trajectory], Standard]] = {
    "bridge": bridge_oxe,
    "bridge_dataset": bridge_dataset,
    "fractal20220817_data": rt1,
    "kuka": kuka,
    "taco_play": taco_play,
    "jaco_play": jaco_play,
    "berkeley_cable_routing": berkeley_cable_routing,
    "roboturk": roboturk,
    "nyu_door_opening_surprising_effectiveness": nyu_door_opening,
    "viola": viola,
    "berkeley_autolab_ur5": berkeley_autolab_ur5,
    "toto": toto,
    "language_table": language_table,
    "columbia_cairlab_pusht_real": pusht,
    "stanford_kuka_multimodal_dataset_converted_externally_to_rlds": stanford_kuka_multimodal,
    "nyu_rot_dataset_converted_externally_to_rlds": nyu_rot,
    "stanford_hydra_dataset_converted_externally_to_rlds": stanford_hydra,
    "austin_buds_dataset_converted_externally_to_rlds": austin_buds,
    "nyu_franka_play_dataset_converted_externally_to_rlds": nyu_franka_play,
    "maniskill_dataset_converted_externally_to_rlds": maniskill,
    "furniture_bench_dataset_converted_externally_to_rlds": furniture_bench,
    "cmu_franka_exploration_dataset_converted_externally_to_rlds": _drop_last_dim_no_state,
    "ucsd_kitchen_dataset_converted_externally_to_rlds": ucsd_kitchen,
    "ucsd_pick_and_place_dataset_converted_externally_to_rlds": ucsd_pick_place,
    "austin_sailor_dataset_converted_externally_to_rlds": austin_sailor_sirius,
    "austin_sirius_dataset_converted_externally_to_rlds": austin_sailor_sirius,
    "bc_z": bc_z,
    "utokyo_pr2_opening_fridge_converted_externally_to_rlds": drop_last_action_dim,
    "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds": drop_last_action_dim,
    "utokyo_xarm_pick_and_place_converted_externally_to_rlds": utokyo_xarm_pick_place,
    "utokyo_xarm_bimanual_converted_externally_to_rlds": utokyo_xarm_bimanual,
    "robo_net": robo_net,
    "berkeley_mvp_converted_externally_to_rlds": berkeley_mvp,
    "berkeley_rpt_converted_externally_to_rlds": berkeley_rpt,
    "kaist_nonprehensile_converted_externally_to_rlds": kaist_nonprehensile,
    "stanford_mask_vit_converted_externally_to_rlds": stanford_mask_vit,
    "tokyo_u_lsmo_converted_externally_to_rlds": tokyo_lsmo,
    "dlr_sara_pour_converted_externally_to_rlds": state_as_is,
    "dlr_sara_grid_clamp_converted_externally_to_rlds": dlr_sara_grid_clamp,
    "dlr_edan_shared_control_converted_externally_to_rlds": dlr_edan_shared_control,
    "asu_table_top_converted_externally_to_rlds": asu_table_top,
    "stanford_robocook_converted_externally_to_rlds": state_as_is,
    "imperialcollege_sawyer_wrist_cam": _drop_last_dim_no_state,
    "iamlab_cmu_pickup_insert_converted_externally_to_rlds": iamlab_pick_insert,
    "uiuc_d3field": uiuc_d3field,
    "utaustin_mutex": utaustin_mutex,
    "berkeley_fanuc_manipulation": berkeley_fanuc,
    "cmu_playing_with_food": cmu_playing_with_food,
    "cmu_play_fusion": cmu_play_fusion,
    "cmu_stretch": cmu_stretch,
    "droid": droid,
}


def checked(dataset: str, fn: Callable[[Trajectory], Standard], tr: Trajectory) -> Standard:
    """``fn`` (``dataset``'s transform) on one episode, its failures and results checked.

    Raises:
        CorruptInputError: a key the transform needs is missing or has another shape, or the
            result holds a NaN or infinity (naming the episode and the step).
    """
    try:
        out = fn(tr)
    except (IndexError, ValueError) as error:
        raise CorruptInputError(
            f"the {dataset} transform cannot read this episode: {error}",
            subject=tr.subject,
            fix="the dataset's keys or shapes differ from the ones the transform was written for",
        ) from error
    for name, value in (("action", out.action), ("state", out.state)):
        if value is not None and len(value) and not np.isfinite(value).all():
            step = int(np.argwhere(~np.isfinite(value))[0][0])
            raise CorruptInputError(
                f"the standardized {name} is not finite at kept step {step} "
                f"(episode step {int(out.keep[step])})",
                subject=tr.subject,
                fix="the source holds NaN or infinity there; remove the episode at the source",
            )
    return out


def transform_of(dataset: str) -> Callable[[Trajectory], Standard]:
    """Octo's (or OpenVLA's) transform of an OXE dataset.

    Raises:
        ConfigError: Octo has no transform for ``dataset`` (naming the ones it has).
    """
    if dataset not in TRANSFORMS:
        raise ConfigError(
            f"Octo has no standardization transform for the OXE dataset {dataset!r}",
            subject=f"openx {dataset}",
            fix="standardize one of: " + ", ".join(sorted(TRANSFORMS)),
        )
    return TRANSFORMS[dataset]
