"""OXE folders written from the TFDS authors' real features.json, built to standardized
partitions through the real stages (mirror, decode, TED, standardize)."""

from __future__ import annotations

from pathlib import Path

import pytest

from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.standardized.stage import build_standardized_stage
from warehouse_fixtures.oxe_from_features import write_from_features

# relative gripper commands (+1 close, -1 open) of 5- and 4-step episodes, for the rt1-like
# datasets (test_oxe_transforms.py works out the absolute states Octo's scan gives)
REL = {5: [0.0, 1.0, 0.0, -1.0, 0.0], 4: [0.0, -1.0, 0.0, 1.0]}
G = {"action/gripper_closedness_action": lambda t, n: [REL[n][t]]}

# every feature of the real features.json is written (berkeley_autolab_ur5's float32 depth
# Image too, as TFDS bit-casts it into a PNG); no leaf is dropped unless a test asks
DROP: dict[str, tuple[str, ...]] = {}


def features_json(shared_samples: Path, name: str) -> Path:
    return next((shared_samples / "oxe_features" / name).rglob("features.json"))


def build_ted(layout: WarehouseLayout, src: Path, name: str) -> None:
    mirror_openx(str(src), name, layout.raw_dir("openx", name), root=layout.root,
                 code_version="t")  # fmt: skip
    decode_openx(layout, name, code_version="t")
    build_ted_stage(layout, "openx", name, code_version="t")


@pytest.fixture
def oxe(shared_samples, tmp_path):
    """``oxe(name, lengths, overrides=None, standardize=True)`` -> (layout, episodes written)."""
    layout = WarehouseLayout.local(tmp_path / "wh")

    def make(name, lengths, overrides=None, *, standardize=True, instructions=None):
        _, episodes = write_from_features(
            tmp_path / "src", name, features_json(shared_samples, name), lengths,
            overrides=overrides, instructions=instructions, drop=DROP.get(name, ()),
        )  # fmt: skip
        build_ted(layout, tmp_path / "src", name)
        if standardize:
            build_standardized_stage(layout, "openx", name, code_version="t")
        return layout, episodes

    return make
