"""Which camera is which view, and what the state and action encode, per OXE dataset: Octo's
``OXE_DATASET_CONFIGS`` (``octo/data/oxe/oxe_dataset_configs.py``) for the datasets that have an
OXE folder, and OpenVLA's for OXE's own bridge (Octo configures only its private copy,
``bridge_dataset``) and for DROID (which Octo does not configure).

A view names an observation key of the dataset's TED; ``None`` is a view the dataset lacks
(padded in batches, flagged in ``pad_mask``). Depth views are not standardized.
"""

from __future__ import annotations

from dataclasses import dataclass

VIEWS = ("primary", "secondary", "wrist")


@dataclass(frozen=True)
class DatasetConfig:
    primary: str | None
    secondary: str | None = None
    wrist: str | None = None
    proprio: str = "POS_EULER"  # Octo's ProprioEncoding name (NONE: no state)
    action: str = "EEF_POS"  # Octo's ActionEncoding name

    @property
    def views(self) -> dict[str, str | None]:
        return {"primary": self.primary, "secondary": self.secondary, "wrist": self.wrist}

    @property
    def action_mask(self) -> list[bool]:
        """Octo's ``action_normalization_mask``: the gripper dimension is not normalized."""
        if self.action == "EEF_POS":
            return [True] * 6 + [False]
        if self.action == "JOINT_POS":
            return [True] * 7 + [False]
        raise ValueError(f"no normalization mask for action encoding {self.action}")

    @property
    def action_space(self) -> str:
        """The name TorchRL's ``RobotDatasetMetadata`` uses for it."""
        return {"EEF_POS": "eef_delta", "JOINT_POS": "joint_delta"}.get(self.action, "unknown")


C = DatasetConfig
_X = "_converted_externally_to_rlds"
CONFIGS: dict[str, DatasetConfig] = {
    "fractal20220817_data": C("image", proprio="POS_QUAT"),
    "kuka": C("image", proprio="POS_QUAT"),
    "bridge": C("image", "image_1"),  # OpenVLA bridge_oxe; OXE's folder has no image_1
    "bridge_dataset": C("image_0", "image_1"),  # Octo's private copy, if mirrored
    "taco_play": C("rgb_static", None, "rgb_gripper"),
    "jaco_play": C("image", None, "image_wrist"),
    "berkeley_cable_routing": C("image", "top_image", "wrist45_image", proprio="JOINT"),
    "roboturk": C("front_rgb", proprio="NONE"),
    "nyu_door_opening_surprising_effectiveness": C(None, None, "image", proprio="NONE"),
    "viola": C("agentview_rgb", None, "eye_in_hand_rgb", proprio="JOINT"),
    "berkeley_autolab_ur5": C("image", None, "hand_image", proprio="POS_QUAT"),
    "toto": C("image", proprio="JOINT"),
    "language_table": C("rgb"),
    "columbia_cairlab_pusht_real": C("image", None, "wrist_image"),
    f"stanford_kuka_multimodal_dataset{_X}": C("image", proprio="POS_QUAT"),
    f"nyu_rot_dataset{_X}": C("image"),
    f"stanford_hydra_dataset{_X}": C("image", None, "wrist_image"),
    f"austin_buds_dataset{_X}": C("image", None, "wrist_image", proprio="JOINT"),
    f"nyu_franka_play_dataset{_X}": C("image", "image_additional_view"),
    f"maniskill_dataset{_X}": C("image", None, "wrist_image", proprio="POS_QUAT"),
    f"furniture_bench_dataset{_X}": C("image", None, "wrist_image", proprio="POS_QUAT"),
    f"cmu_franka_exploration_dataset{_X}": C("highres_image", proprio="NONE"),
    f"ucsd_kitchen_dataset{_X}": C("image", proprio="JOINT"),
    f"ucsd_pick_and_place_dataset{_X}": C("image"),
    f"austin_sailor_dataset{_X}": C("image", None, "wrist_image", proprio="POS_QUAT"),
    f"austin_sirius_dataset{_X}": C("image", None, "wrist_image", proprio="POS_QUAT"),
    "bc_z": C("image"),
    f"utokyo_pr2_opening_fridge{_X}": C("image"),
    f"utokyo_pr2_tabletop_manipulation{_X}": C("image"),
    f"utokyo_xarm_pick_and_place{_X}": C("image", "image2", "hand_image"),
    f"utokyo_xarm_bimanual{_X}": C("image"),
    "robo_net": C("image", "image1"),
    f"berkeley_mvp{_X}": C(None, None, "hand_image", proprio="POS_QUAT", action="JOINT_POS"),
    f"berkeley_rpt{_X}": C(None, None, "hand_image", proprio="JOINT", action="JOINT_POS"),
    f"kaist_nonprehensile{_X}": C("image", proprio="POS_QUAT"),
    f"stanford_mask_vit{_X}": C("image"),
    f"tokyo_u_lsmo{_X}": C("image"),
    f"dlr_sara_pour{_X}": C("image"),
    f"dlr_sara_grid_clamp{_X}": C("image"),
    f"dlr_edan_shared_control{_X}": C("image"),
    f"asu_table_top{_X}": C("image"),
    f"stanford_robocook{_X}": C("image_1", "image_2"),
    "imperialcollege_sawyer_wrist_cam": C("image", None, "wrist_image", proprio="NONE"),
    f"iamlab_cmu_pickup_insert{_X}": C("image", None, "wrist_image", proprio="JOINT"),
    "uiuc_d3field": C("image_1", "image_2", proprio="NONE"),
    "utaustin_mutex": C("image", None, "wrist_image", proprio="JOINT"),
    "berkeley_fanuc_manipulation": C("image", None, "wrist_image", proprio="JOINT"),
    "cmu_playing_with_food": C("image", None, "finger_vision_1"),
    "cmu_play_fusion": C("image", proprio="JOINT"),
    "cmu_stretch": C("image"),
    # OpenVLA's OXE_DATASET_CONFIGS["droid"] (Octo has none); its state is POS_QUAT by name,
    # though droid_baseact_transform makes it the 6-D euler pose and the gripper
    "droid": C("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left",
               proprio="POS_QUAT"),
}  # fmt: skip
