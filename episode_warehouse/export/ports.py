"""LeRobot's own ports of datasets, as data: where LeRobot publishes a port of a dataset, an export
of that dataset has the port's schema, so a policy config written for the hub's copy runs on ours.

A :class:`Port` lists the port's features in its order; each says where its values come from in
the TED (:class:`Steps`, :class:`Text`, :class:`EpisodeValue`, :class:`Camera`). Values are cast
to the feature's dtype (the ports cast float64 to float32). One port today:

- DROID 1.0.1, as ``examples/port_datasets/port_droid.py`` in huggingface/lerobot writes it (the
  schema of the hub's ``lerobot/droid_1.0.1``): fps 15, robot_type "Franka", the cameras renamed
  (``wrist_image_left`` -> ``wrist_left`` ...), ``observation.state`` = joint position (7) +
  gripper position (1), ``action`` = ``action_dict``'s joint position + gripper position, the
  RLDS ``action`` kept as ``action.original``, and the episode's metadata repeated per frame.
  ``task_category`` holds the building, as the port writes it (its code reads
  ``episode_metadata/building`` for both; DROID's RLDS release has no task category).

LeRobot's ports of other OXE datasets (the hub's ``lerobot/<dataset>``, written by its retired
``openx_rlds_format.py``) name leaves as the generic export already does
(``observation.<key>``, ``observation.images.<key>``, ``action``, ``next.reward``,
``next.done``), so they need no entry here (docs/lerobot-export.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from episode_warehouse import partition_keys


@dataclass(frozen=True)
class Steps:
    """TED step leaves (``/``-joined key paths), concatenated in this order."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class Text:
    """A text leaf of the TED (an index into its ``texts``), or ``task``: the step's task."""

    path: str


@dataclass(frozen=True)
class EpisodeValue:
    """A value of the episode's metadata (the TED episode table's ``episode_metadata``),
    repeated on every step; ``contains``: a flag, whether the value holds this text."""

    key: str
    contains: str | None = None


@dataclass(frozen=True)
class Camera:
    """A camera of the TED (its key path); the shape is the TED's frames'."""

    path: str


@dataclass(frozen=True)
class PortFeature:
    name: str
    dtype: str  # float32, bool, string, or "camera" (image or video, as the export asks)
    shape: tuple[int, ...]
    take: Steps | Text | EpisodeValue | Camera
    axes: tuple[str, ...] | None = None

    def names(self) -> dict | list | None:
        if self.dtype == "camera":
            return ["height", "width", "channels"]
        return {"axes": list(self.axes)} if self.axes else None


@dataclass(frozen=True)
class Port:
    """LeRobot's port of ``dataset`` (a partition of ``source``, any shard range of it)."""

    source: str
    dataset: str
    fps: int
    robot_type: str
    origin: str  # where the port's code is, for the docs and errors
    features: tuple[PortFeature, ...]


_XYZ_RPY = ("x", "y", "z", "roll", "pitch", "yaw")
_JOINTS = tuple(f"joint_{i}" for i in range(7))
_META = "episode_metadata/"


def _f32(name: str, take, shape: int, axes=None) -> PortFeature:
    return PortFeature(name, "float32", (shape,), take, axes)


def _flag(name: str, take) -> PortFeature:
    return PortFeature(name, "bool", (1,), take)


def _text(name: str, take) -> PortFeature:
    return PortFeature(name, "string", (1,), take)


DROID = Port(
    source="openx",
    dataset="droid",
    fps=15,
    robot_type="Franka",
    origin="huggingface/lerobot examples/port_datasets/port_droid.py (DROID_FEATURES)",
    features=(
        _flag("is_first", Steps(("is_init",))),
        _flag("is_last", Steps(("next/done",))),
        _flag("is_terminal", Steps(("next/terminated",))),
        _text("language_instruction", Text("task")),
        _text("language_instruction_2", Text("language_instruction_2")),
        _text("language_instruction_3", Text("language_instruction_3")),
        _f32("observation.state.gripper_position", Steps(("observation/gripper_position",)), 1,
             ("gripper",)),
        _f32("observation.state.cartesian_position",
             Steps(("observation/cartesian_position",)), 6, _XYZ_RPY),
        _f32("observation.state.joint_position", Steps(("observation/joint_position",)), 7,
             _JOINTS),
        _f32("observation.state",
             Steps(("observation/joint_position", "observation/gripper_position")), 8,
             (*_JOINTS, "gripper")),
        PortFeature("observation.images.wrist_left", "camera", (),
                    Camera("observation/wrist_image_left")),
        PortFeature("observation.images.exterior_1_left", "camera", (),
                    Camera("observation/exterior_image_1_left")),
        PortFeature("observation.images.exterior_2_left", "camera", (),
                    Camera("observation/exterior_image_2_left")),
        _f32("action.gripper_position", Steps(("action_dict/gripper_position",)), 1,
             ("gripper",)),
        _f32("action.gripper_velocity", Steps(("action_dict/gripper_velocity",)), 1,
             ("gripper",)),
        _f32("action.cartesian_position", Steps(("action_dict/cartesian_position",)), 6,
             _XYZ_RPY),
        _f32("action.cartesian_velocity", Steps(("action_dict/cartesian_velocity",)), 6,
             _XYZ_RPY),
        _f32("action.joint_position", Steps(("action_dict/joint_position",)), 7, _JOINTS),
        _f32("action.joint_velocity", Steps(("action_dict/joint_velocity",)), 7, _JOINTS),
        _f32("action.original", Steps(("action",)), 7, (*_XYZ_RPY, "gripper")),
        _f32("action", Steps(("action_dict/joint_position", "action_dict/gripper_position")), 8,
             (*_JOINTS, "gripper")),
        _f32("discount", Steps(("discount",)), 1),
        _f32("reward", Steps(("next/reward",)), 1),
        _text("task_category", EpisodeValue(_META + "building")),  # as the port writes it
        _text("building", EpisodeValue(_META + "building")),
        _text("collector_id", EpisodeValue(_META + "collector_id")),
        _text("date", EpisodeValue(_META + "date")),
        _f32("camera_extrinsics.wrist_left", EpisodeValue(_META + "extrinsics_wrist_cam"), 6,
             _XYZ_RPY),
        _f32("camera_extrinsics.exterior_1_left",
             EpisodeValue(_META + "extrinsics_exterior_cam_1"), 6, _XYZ_RPY),
        _f32("camera_extrinsics.exterior_2_left",
             EpisodeValue(_META + "extrinsics_exterior_cam_2"), 6, _XYZ_RPY),
        _flag("is_episode_successful", EpisodeValue(_META + "file_path", contains="/success/")),
    ),
)  # fmt: skip

PORTS = (DROID,)


def port_of(source: str, partition: str) -> Port | None:
    """LeRobot's port of the dataset ``partition`` of ``source`` holds (a shard range of one
    included), or None."""
    dataset = partition_keys.dataset_of(partition)
    return next((p for p in PORTS if p.source == source and p.dataset == dataset), None)
