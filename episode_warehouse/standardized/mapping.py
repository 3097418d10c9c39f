"""How a non-OXE partition (a LeRobot dataset) joins mixtures: a mapping its owner declares, in
``<root>/config/standardized_mappings.json``, keyed by ``source:partition``::

    {"lerobot:lerobot/pusht": {
        "action": "action",                 # the TED key of the action, used as it is
        "action_encoding": "EEF_POS",       # EEF_POS (7-D, last = gripper 1 open), JOINT_POS, OTHER
        "state": "observation/state",       # the TED key of the proprio state, or null
        "views": {"primary": "observation/image", "secondary": null, "wrist": null}
    }}

Nothing is guessed: a partition without a mapping is refused, and the error shows the mapping
to write, filled with the partition's own keys. What it names is checked for its role: the
action and the state are measured values (not a camera, not the episode's bookkeeping
``episode``/``is_init``/``task_index``, not a flag or a ``next/`` key), each view a camera, and
``EEF_POS`` (Octo's end-effector delta) a 7-D action.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from episode_warehouse.errors import ConfigError
from episode_warehouse.guards.json_input import load_json
from episode_warehouse.standardized.configs import VIEWS, DatasetConfig
from episode_warehouse.standardized.transforms import Standard, Trajectory, f32
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.ted.layout import END_FLAGS, IDS

MAPPINGS_FILE = Path("config") / "standardized_mappings.json"
ENCODINGS = ("EEF_POS", "JOINT_POS", "OTHER")
EEF_POS_DIMS = 7  # 3 delta xyz, 3 delta rpy, the gripper


def _role_problem(key: str, role: str, cameras: set[str] | None) -> str | None:
    """Why ``key`` cannot play ``role`` (``action``, ``state`` or a view), or None
    (``cameras``: the TED's camera keys, None when not known)."""
    if role == "view":
        return None if cameras is None or key in cameras else "not a camera"
    if key.startswith("next/") or key in IDS + END_FLAGS:
        return "the episode's bookkeeping or a flag, not a value the robot measured or commanded"
    if cameras is not None and key in cameras:
        return "a camera"
    return None


def _suggestion(source: str, partition: str, keys: dict) -> str:
    floats = [k for k, e in keys.items() if not k.startswith("next/")]
    cameras = [k for k in floats if "image" in k]
    state = next((k for k in floats if k.endswith("state")), None)
    example = {
        f"{source}:{partition}": {
            "action": "action" if "action" in keys else "<key>",
            "action_encoding": "EEF_POS | JOINT_POS | OTHER",
            "state": state,
            "views": {
                v: (cameras[i] if i < len(cameras) and v != "secondary" else None)
                for i, v in enumerate(VIEWS)
            },  # fmt: skip
        }
    }
    return json.dumps(example, allow_nan=False)


def mapping_for(
    root: Root | str | os.PathLike,
    source: str,
    partition: str,
    ted_keys: dict,
    *,
    shapes: dict[str, tuple[int, ...]] | None = None,
    cameras: set[str] | None = None,
) -> dict:
    """The declared mapping of ``source:partition``, checked against its TED keys (``shapes``:
    each key's row shape; ``cameras``: the keys that are cameras).

    Raises:
        ConfigError: none is declared (the error holds one to write), or it names a key the
            TED does not have, a key in a role it cannot play, an unknown encoding, or
            ``EEF_POS`` for an action that is not 7-D.
    """
    root = parse_root(root)
    file = root.location(MAPPINGS_FILE.as_posix())
    name = f"{source}:{partition}"
    data = root.read_bytes(MAPPINGS_FILE.as_posix())
    declared = (
        load_json(data, subject=file, fix="write it as JSON (see docs/standardized.md)")
        if data is not None
        else {}
    )
    if not isinstance(declared, dict) or name not in declared:
        raise ConfigError(
            f"{name} has no standardized mapping: which key is the state, the action and its "
            "encoding, which camera is primary/wrist",
            subject=name,
            fix=f"declare it in {file}, e.g. {_suggestion(source, partition, ted_keys)}",
        )
    m = declared[name]
    if not isinstance(m, dict) or not isinstance(m.get("action"), str):
        raise ConfigError("the mapping needs an 'action' key", subject=f"{file}: {name}")
    if m.get("action_encoding") not in ENCODINGS:
        raise ConfigError(
            f"action_encoding {m.get('action_encoding')!r} is not one of {ENCODINGS}",
            subject=f"{file}: {name}",
        )
    views = m.get("views") or {}
    if not isinstance(views, dict) or set(views) - set(VIEWS):
        raise ConfigError(f"views must be a subset of {VIEWS}", subject=f"{file}: {name}")
    roles = [("action", m["action"]), ("state", m.get("state")),
             *((f"{v} view", k) for v, k in views.items())]  # fmt: skip
    for role, key in roles:
        if key is not None and (not isinstance(key, str) or key not in ted_keys):
            raise ConfigError(
                f"the mapping names {key!r}, which the TED of {name} does not have",
                subject=f"{file}: {name}",
                fix="use one of " + ", ".join(sorted(k for k in ted_keys if "/" in k or k)),
            )
        problem = None if key is None else _role_problem(key, role.split()[-1], cameras)
        if problem is not None:
            fitting = sorted(k for k in ted_keys if _role_problem(k, role.split()[-1], cameras)
                             is None and not k.startswith("next/"))  # fmt: skip
            raise ConfigError(
                f"the mapping's {role} is {key!r}: {problem}",
                subject=f"{file}: {name}",
                fix=f"name one of {', '.join(fitting) or '(none in this TED)'}",
            )
    width = int(np.prod((shapes or {}).get(m["action"], (EEF_POS_DIMS,)), dtype=np.int64))
    if m["action_encoding"] == "EEF_POS" and width != EEF_POS_DIMS:
        raise ConfigError(
            f"action_encoding EEF_POS is Octo's 7-D end-effector delta; {m['action']!r} has "
            f"{width} dimensions",
            subject=f"{file}: {name}",
            fix="declare JOINT_POS for joint targets, or OTHER",
        )
    return {
        "action": m["action"],
        "action_encoding": m["action_encoding"],
        "state": m.get("state"),
        "views": {v: views.get(v) for v in VIEWS},
    }


def mapped_config(mapping: dict) -> DatasetConfig:
    v = mapping["views"]
    return DatasetConfig(
        v["primary"], v["secondary"], v["wrist"],
        proprio="DECLARED" if mapping["state"] else "NONE",
        action=mapping["action_encoding"],
    )  # fmt: skip


def mapped_transform(mapping: dict):
    """The transform of a declared mapping: the action and state as they are, the
    instruction per step."""

    def transform(tr: Trajectory) -> Standard:
        action = tr(mapping["action"])
        action = f32(action.reshape(len(action), -1))
        state = None
        if mapping["state"]:
            raw = tr(mapping["state"])
            state = f32(raw.reshape(len(raw), -1))
        keep = np.arange(tr.length)
        return Standard(action, state, tr.instruction, keep)

    return transform
