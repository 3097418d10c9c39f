"""NaN and infinity never reach a TED (#42): the shared decoded writer refuses them in actions,
states and rewards for every layout, naming the source, file, episode, step and key; other
float keys are refused too unless EPISODE_WAREHOUSE_ALLOW_NONFINITE names them, and then they
are counted in the decoded record."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.stage import decode_openx
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.rlds_robot import FEATURES, episode


def _write(src, change):
    episodes = {"train": [[episode(0, 5, terminal=True), episode(1, 4, terminal=False)]]}
    change(episodes["train"][0][1]["steps"][2])  # episode 1, step 2
    w.write_dataset(src, "toy_robot", "1.0.0", FEATURES, episodes)


def _decode(src, tmp_path):
    layout = WarehouseLayout.local(tmp_path / "wh")
    mirror_openx(
        str(src), "toy_robot", layout.raw_dir("openx", "toy_robot"), root=layout.root,
        code_version="t",
    )  # fmt: skip
    decode_openx(layout, "toy_robot", code_version="t")
    return layout


def _set(path, value):
    def change(step):
        node = step
        for key in path[:-1]:
            node = node[key]
        leaf = np.array(node[path[-1]], copy=True)
        leaf.reshape(-1)[0] = value
        node[path[-1]] = leaf.astype(np.asarray(node[path[-1]]).dtype)

    return change


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (("action", "world_vector"), np.nan, "action/world_vector"),
        (("action", "world_vector"), -np.inf, "action/world_vector"),
        (("observation", "state"), np.nan, "observation/state"),
        (("observation", "joint_pos_f16"), np.inf, "observation/joint_pos_f16"),
        (("reward",), np.inf, "reward"),
    ],
)
def test_rlds_nonfinite_measurements_are_refused_by_step(tmp_path, path, value, key):
    _write(tmp_path / "src", _set(path, value))
    with pytest.raises(CorruptInputError) as err:
        _decode(tmp_path / "src", tmp_path)
    text = str(err.value)
    assert "openx toy_robot" in text and "toy_robot-train.tfrecord-00000-of-00001" in text
    assert "episode 1" in text and "step 2" in text, text
    assert key in text
    layout = WarehouseLayout.local(tmp_path / "wh")
    assert not (layout.decoded_dir("openx", "toy_robot") / "meta.json").exists()


def test_other_float_keys_are_refused_unless_allowed_and_then_counted(tmp_path, monkeypatch):
    _write(tmp_path / "src", _set(("discount",), np.nan))
    with pytest.raises(CorruptInputError, match="EPISODE_WAREHOUSE_ALLOW_NONFINITE=discount"):
        _decode(tmp_path / "src", tmp_path)
    monkeypatch.setenv("EPISODE_WAREHOUSE_ALLOW_NONFINITE", "discount")
    layout = _decode(tmp_path / "src", tmp_path)
    record = open_decoded(layout.decoded_dir("openx", "toy_robot")).meta
    assert record.extra["nonfinite"] == {"discount": 1}
