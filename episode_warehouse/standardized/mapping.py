"""How a non-OXE partition (a LeRobot dataset) joins mixtures: a mapping its owner declares, in
``<root>/config/standardized_mappings.json``, keyed by ``source:partition``::

    {"lerobot:lerobot/pusht": {
        "action": "action",                 # the TED key of the action, used as it is
        "action_encoding": "EEF_POS",       # EEF_POS (7-D, last = gripper 1 open), JOINT_POS, OTHER
        "state": "observation/state",       # the TED key of the proprio state, or null
        "views": {"primary": "observation/image", "secondary": null, "wrist": null}
    }}

Nothing is guessed: a partition without a mapping is refused, and the error shows the mapping
to write, filled with the partition's own keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from episode_warehouse.errors import ConfigError
from episode_warehouse.guards.json_input import read_json_file
from episode_warehouse.standardized.configs import VIEWS, DatasetConfig
from episode_warehouse.standardized.transforms import Standard, Trajectory, f32

MAPPINGS_FILE = Path("config") / "standardized_mappings.json"
ENCODINGS = ("EEF_POS", "JOINT_POS", "OTHER")


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


def mapping_for(root_folder: Path, source: str, partition: str, ted_keys: dict) -> dict:
    """The declared mapping of ``source:partition``, checked against its TED keys.

    Raises:
        ConfigError: none is declared (the error holds one to write), or it names a key the
            TED does not have or an unknown encoding.
    """
    file = Path(root_folder) / MAPPINGS_FILE
    name = f"{source}:{partition}"
    declared = (
        read_json_file(file, fix="write it as JSON (see docs/standardized.md)")
        if file.is_file()
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
    for key in [m["action"], m.get("state"), *views.values()]:
        if key is not None and (not isinstance(key, str) or key not in ted_keys):
            raise ConfigError(
                f"the mapping names {key!r}, which the TED of {name} does not have",
                subject=f"{file}: {name}",
                fix="use one of " + ", ".join(sorted(k for k in ted_keys if "/" in k or k)),
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
