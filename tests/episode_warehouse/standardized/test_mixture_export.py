"""One LeRobot dataset from a two-robot mixture (different action and state widths, cameras,
rates), read back with lerobot's own ``LeRobotDataset``: every frame's action, state, flags,
source dataset and task, and each dataset's own rate and statistics beside it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from episode_warehouse.standardized import dataset_statistics, open_standardized
from episode_warehouse.standardized.export import MIXTURE_FILE, export_mixture
from tests.episode_warehouse.standardized.conftest import G


@pytest.mark.integration  # lerobot's writer (datasets' tqdm lock) starts multiprocessing's tracker
def test_a_mixture_exports_as_one_lerobot_dataset(oxe):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    oxe("fractal20220817_data", [5, 4], G)
    layout, _ = oxe("taco_play", [6, 3])
    root = layout.folder
    mix = [("fractal20220817_data", 1.0), ("taco_play", 2.0)]
    built = export_mixture(mix, "two-robots", root, image_size=(24, 32), fps=10)
    assert built.meta.frames == 18 and built.meta.episodes == 4
    folder = layout.lerobot_dir("two-robots")
    theirs = LeRobotDataset("episode-warehouse/two-robots", root=folder)
    assert len(theirs) == 18 and theirs.meta.total_episodes == 4
    table = json.loads((folder / MIXTURE_FILE).read_text())
    assert [d["dataset"] for d in table["datasets"]] == ["fractal20220817_data", "taco_play"]
    assert [d["fps"] for d in table["datasets"]] == [3.0, 15.0]  # each dataset's own rate
    assert table["datasets"][1]["statistics"]["taco_play"] == dataset_statistics(
        "openx", "taco_play", root=root
    )
    frame = 0
    for index, name in enumerate(["fractal20220817_data", "taco_play"]):
        td = open_standardized("openx", name, root=root)
        texts = list(td["language_instruction"])
        state_dim = td["observation", "state"].shape[1]
        for row in range(len(td)):
            item = theirs[frame]
            assert int(item["dataset_index"]) == index
            np.testing.assert_array_equal(item["action"].numpy(), td["action"][row].numpy())
            state = item["observation.state"].numpy()
            np.testing.assert_array_equal(state[:state_dim], td["observation", "state"][row])
            assert not state[state_dim:].any()  # taco's 7-D state padded to fractal's 8
            assert item["state_dim_is_pad"].tolist() == [d >= state_dim for d in range(8)]
            assert item["observation.images.primary"].shape == (3, 24, 32)
            has_wrist = name == "taco_play"
            assert bool(item["wrist_view_is_pad"]) is not has_wrist
            if not has_wrist:
                assert not torch.count_nonzero(item["observation.images.wrist"])
            episode_start = int(td["is_init"][: row + 1].nonzero().max())
            assert item["task"] == texts[episode_start]
            frame += 1
    assert export_mixture(mix, "two-robots", root, image_size=(24, 32), fps=10).rebuilt is False


@pytest.mark.integration  # lerobot's writer
def test_the_export_shows_its_own_progress_and_no_datasets_bars(oxe, capfd):
    """#48: export_mixture flooded the screen with ``datasets`` bars (a "Map" and a "Saving"
    bar per episode) and showed none of its own."""
    from episode_warehouse.progress import set_display

    seen = []

    class Recorded:
        def __init__(self, desc, total, unit):
            self.desc, self.total, self.unit, self.done = desc, total, unit, 0
            seen.append(self)

        def update(self, n=1):
            self.done += n

        def close(self):
            pass

    layout, _ = oxe("taco_play", [4, 3, 5])
    capfd.readouterr()
    previous = set_display(Recorded)
    try:
        export_mixture([("taco_play", 1.0)], "quiet", layout.folder, image_size=(16, 16), fps=10)
    finally:
        set_display(previous)
    bars = [b for b in seen if b.desc == "exporting the mixture"]
    assert [(b.total, b.done, b.unit) for b in bars] == [(12, 12, "frames")]
    err = capfd.readouterr().err
    assert "Map" not in err and "Saving the dataset" not in err, err[-400:]
