"""A declared mapping names keys in roles they can play (#48): it accepted ``episode``,
``next/done`` or a camera as the action, and ``EEF_POS`` (Octo's 7-D end-effector delta) for a
2-D action, without a word."""

from __future__ import annotations

import json

import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.standardized.mapping import MAPPINGS_FILE, mapping_for

NAMES = ("action", "observation/state", "observation/image/front", "episode", "is_init",
         "next/done", "next/observation/state", "task_index")  # fmt: skip
KEYS = {k: {} for k in NAMES}
SHAPES = {"action": (6,), "observation/state": (6,), "observation/image/front": (3, 8, 8)}
CAMERAS = {"observation/image/front"}


def _check(tmp_path, **mapping):
    declared = {"action": "action", "action_encoding": "JOINT_POS", "state": "observation/state",
                "views": {"primary": "observation/image/front"}, **mapping}  # fmt: skip
    file = tmp_path / MAPPINGS_FILE
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"lerobot:lab/arm": declared}))
    return mapping_for(tmp_path, "lerobot", "lab/arm", KEYS, shapes=SHAPES, cameras=CAMERAS)


def test_a_sound_mapping_passes(tmp_path):
    assert _check(tmp_path)["views"]["primary"] == "observation/image/front"


@pytest.mark.parametrize(
    ("mapping", "match"),
    [
        ({"action": "episode"}, "action is 'episode': the episode's bookkeeping"),
        ({"action": "next/done"}, "action is 'next/done': the episode's bookkeeping"),
        ({"action": "observation/image/front"}, "action is 'observation/image/front': a camera"),
        ({"state": "is_init"}, "state is 'is_init'"),
        ({"state": "next/observation/state"}, "state is 'next/observation/state'"),
        ({"views": {"wrist": "observation/state"}}, "wrist view is 'observation/state': not a"),
        ({"action_encoding": "EEF_POS"}, "EEF_POS is Octo's 7-D end-effector delta; 'action' "
                                         "has 6 dimensions"),
    ],
)  # fmt: skip
def test_keys_in_roles_they_cannot_play_are_refused(tmp_path, mapping, match):
    with pytest.raises(ConfigError, match=match) as error:
        _check(tmp_path, **mapping)
    assert error.value.fix
