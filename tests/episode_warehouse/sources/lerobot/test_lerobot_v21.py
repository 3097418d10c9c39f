"""LeRobot v2.1 datasets as published (#71 item 2), read directly, no conversion.

The datasets are written by lerobot 0.3.3's own ``LeRobotDataset`` (the last lerobot that
writes v2.1) in its side environment, with an image camera and with an AV1 video camera; what
lerobot 0.3.3's reader returns for every frame is saved there too
(``warehouse_fixtures/lerobot_v21_side.py``). Every frame and value of our TED equals it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from episode_warehouse.errors import CorruptInputError, FormatVersionError
from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
from tests.episode_warehouse.sources.lerobot.test_lerobot_source import _ted

pytestmark = pytest.mark.slow(
    reason="lerobot 0.3.3 in its side environment (installed once, ~30 s): two datasets "
    "written and read back by it, ~15 s each"
)
PROJECT = Path(__file__).resolve().parents[4]
SIDE = PROJECT / "warehouse_fixtures" / "lerobot_v21_side.py"
LENGTHS = (12, 9, 15)


def _side_python() -> str:
    done = subprocess.run([str(PROJECT / "scripts" / "side_env.sh"), "lerobot-0.3.3"],
                          capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module", params=["image", "video"])
def v21(request, tmp_path_factory) -> tuple[Path, dict]:
    """(dataset folder, what lerobot 0.3.3 reads from it)."""
    python = _side_python()
    tmp = tmp_path_factory.mktemp(f"v21-{request.param}")
    repo = f"owner/{request.param}"
    folder = tmp / repo
    lengths = ",".join(map(str, LENGTHS))
    write = [python, str(SIDE), "write", str(folder), "--repo-id", repo, "--lengths", lengths]
    if request.param == "video":
        write.append("--video")
    done = subprocess.run(write, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    read = [python, str(SIDE), "read", str(folder), str(tmp / "theirs.npz"), "--repo-id", repo]
    done = subprocess.run(read, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = dict(np.load(tmp / "theirs.npz"))
    return folder, theirs


def test_every_frame_equals_what_lerobot_0_3_3_reads(v21, tmp_path):
    folder, theirs = v21
    info = json.loads((folder / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v2.1"  # written by lerobot 0.3.3 itself
    source = open_lerobot_folder(folder)
    assert len(source.data_files) == len(LENGTHS)  # one data file an episode
    td, decoded = _ted(folder, tmp_path)
    n = sum(LENGTHS)
    assert td.batch_size[0] == n == len(theirs["index"])
    np.testing.assert_array_equal(
        td["observation", "image", "top"].numpy().transpose(0, 2, 3, 1),
        theirs["observation.images.top"],
    )
    np.testing.assert_array_equal(td["observation", "state"].numpy(), theirs["observation.state"])
    np.testing.assert_array_equal(td["action"].numpy(), theirs["action"])
    np.testing.assert_array_equal(td["next", "reward"].numpy()[:, 0], theirs["next.reward"])
    np.testing.assert_array_equal(td["next", "done"].numpy()[:, 0], theirs["next.done"])
    np.testing.assert_array_equal(td["timestamp"].numpy(), theirs["timestamp"])
    np.testing.assert_array_equal(td["frame"].numpy(), theirs["frame_index"])
    np.testing.assert_array_equal(td["episode"].numpy(), theirs["episode_index"])
    tasks = json.loads(str(theirs["tasks"]))
    assert [decoded.meta.tasks[int(i)] for i in td["task_index"]] == tasks
    episodes = decoded.episodes().to_pylist()
    assert [e["length"] for e in episodes] == list(LENGTHS)
    assert [e["start"] for e in episodes] == [0, LENGTHS[0], LENGTHS[0] + LENGTHS[1]]
    # episodes_stats.jsonl carried per episode, as v3.0's stats columns are
    stats = json.loads(episodes[1]["lerobot_stats"])
    assert stats["observation.state"]["count"] == [LENGTHS[1]]
    assert decoded.meta.fps == 10 and decoded.meta.robot_type == "so100"


def _copy(v21, tmp_path: Path) -> Path:
    out = tmp_path / "copy" / "owner" / "x"
    shutil.copytree(v21[0], out)
    return out


def test_hostile_v21_metadata_is_refused_by_name(v21, tmp_path):
    folder = _copy(v21, tmp_path)
    info_path = folder / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    # a data_path template outside the dataset is never followed
    info_path.write_text(json.dumps({**info, "data_path": "../../{episode_index}.parquet"}))
    with pytest.raises(CorruptInputError, match=r"info.json: info.json's data_path is"):
        open_lerobot_folder(folder)
    info_path.write_text(json.dumps({**info, "chunks_size": 0}))
    with pytest.raises(CorruptInputError, match="chunks_size is 0"):
        open_lerobot_folder(folder)
    info_path.write_text(json.dumps(info))
    episodes = folder / "meta" / "episodes.jsonl"
    lines = episodes.read_text().splitlines()
    episodes.write_text("\n".join([lines[0], '{"episode_index": 1, "tasks": "x", "length": 9}']))
    with pytest.raises(CorruptInputError, match=r"episodes.jsonl:2: tasks is not a list"):
        open_lerobot_folder(folder)
    episodes.write_text("\n".join([lines[0], lines[2]]))  # episode 1 missing
    with pytest.raises(CorruptInputError, match="episode 1 is missing"):
        open_lerobot_folder(folder)
    episodes.write_text("\n".join(lines))
    (folder / "data" / "chunk-000" / "episode_000001.parquet").unlink()
    with pytest.raises(CorruptInputError, match="episode_000001.parquet: the episodes' data file"):
        open_lerobot_folder(folder)


def test_other_versions_name_the_converter(v21, tmp_path):
    folder = _copy(v21, tmp_path)
    info_path = folder / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "codebase_version": "v2.0"}))
    with pytest.raises(FormatVersionError, match="v2.0 dataset.*convert_dataset_v20_to_v21"):
        open_lerobot_folder(folder)


def test_a_v21_and_a_v30_dataset_mix_like_any_two(v21, tmp_path):
    from episode_warehouse import open_ted
    from episode_warehouse.loading import EpisodeStream, select_episodes
    from episode_warehouse.paths import WarehouseLayout
    from tests.helpers import build_lerobot
    from warehouse_fixtures.lerobot_writer import LeRobotSpec

    folder, theirs = v21
    layout = WarehouseLayout.local(tmp_path / "wh")
    old = LeRobotSpec(repo_id=f"owner/{folder.name}")  # the name the v2.1 dataset was written as
    build_lerobot(layout, old, source=folder)
    new = LeRobotSpec(repo_id="owner/v30", lengths=(7, 5), cameras={"top": (64, 96)})
    build_lerobot(layout, new)
    selection = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes WHERE source = 'lerobot' "
        "ORDER BY partition <> 'owner/v30', episode",
        root=layout.folder,
    )
    assert list(selection.partition) == [new.repo_id] * 2 + [old.repo_id] * 3
    items = [ref.read() for ref in EpisodeStream(selection, shuffle=False)]
    assert [len(i) for i in items] == [7, 5, *LENGTHS]
    for p, e, start, item in zip(selection.partition, selection.episode, selection.start, items,
                                 strict=True):  # fmt: skip
        td = open_ted("lerobot", p, root=layout.folder)
        want = td["observation", "image", "top"][int(start) : int(start) + len(item)]
        assert (item["observation", "image", "top"] == want).all(), (p, e)
    v21_pixels = np.concatenate([i["observation", "image", "top"].numpy() for i in items[2:]])
    np.testing.assert_array_equal(
        v21_pixels.transpose(0, 2, 3, 1), theirs["observation.images.top"]
    )


def test_a_v21_dataset_from_the_hub_is_read_at_its_v21_tag(v21, warehouse_env, hub, monkeypatch):
    from episode_warehouse import open_ted
    from warehouse_cli.main import main

    folder, theirs = v21
    repo = "lab/published_v21"
    hub.store.create_repo(repo)
    tagged = hub.store.commit_folder(repo, folder, tag="v2.1")
    hub.store.commit(repo, {"README.md": b"newer, untagged\n"})  # main moves past v2.1
    monkeypatch.delenv("LEROBOT_URL", raising=False)  # the default: hf://datasets
    assert main(["materialize", "lerobot", repo, "--through", "ted"]) == 0
    raw = json.loads((warehouse_env / "raw" / "lerobot" / repo / "meta.json").read_text())
    assert raw["revision"] == tagged
    td = open_ted("lerobot", repo, root=warehouse_env)
    np.testing.assert_array_equal(
        td["observation", "image", "top"].numpy().transpose(0, 2, 3, 1),
        theirs["observation.images.top"],
    )
    np.testing.assert_array_equal(td["action"].numpy(), theirs["action"])
