"""LeRobot exports read back through LeRobotDataset equal the TED, frame by frame, and equal
what lerobot's per-frame path (add_frame for every frame) writes, file by file."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from episode_warehouse import open_ted
from episode_warehouse.errors import (
    CorruptInputError,
    ExportError,
    ForeignArtifactError,
    NotMaterializedError,
    PartitionKeyError,
)
from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.export.compare import differing_files
from episode_warehouse.export.per_frame import write_per_frame
from episode_warehouse.loading import Selection, select_episodes
from episode_warehouse.storage.local import LocalRoot
from tests.helpers import build_atari, build_openx
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # PNG writer processes and catalog queries

ROWS = "SELECT source, partition, episode, start, length FROM episodes"
OUR_TOP_LEVEL = ["croissant.json", "data", "meta"]  # lerobot's folders and our Croissant


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("export") / "wh"
    build_atari(root, "Pong/3", 3, capacity=300, episodes=8, lengths=(20, 70))
    build_openx(
        root, DatasetSpec("cmu_stretch", cameras=("image", "wrist"), image_size=32), [[6, 9], [5]]
    )
    return root


def _rows(sel):
    return [
        (s, p, int(e), int(a), int(n))
        for s, p, e, a, n in zip(
            sel.source, sel.partition, sel.episode, sel.start, sel.length, strict=True
        )
    ]


def _load(request, target):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(request.repo_id, root=target)


def test_atari_lossless_round_trip_in_two_workers(root, tmp_path):
    sel = select_episodes(ROWS + " WHERE source = 'atari' ORDER BY episode", root=root)
    request = ExportRequest("pong3", str(root), _rows(sel))
    meta = export_lerobot(request, tmp_path / "pong3", workers=2).meta
    ds = _load(request, tmp_path / "pong3")
    td = open_ted("atari", "Pong/3", root)
    assert ds.meta.total_episodes == len(sel) == meta.episodes
    assert ds.meta.total_frames == int(sel.length.sum()) == meta.frames
    k = 0
    for e, (start, length) in enumerate(zip(sel.start, sel.length, strict=True)):
        for t in range(length):
            item = ds[k]
            image = (item["observation.image"] * 255).round().to(torch.uint8)
            assert torch.equal(image[0], td["observation"][start + t]), (e, t)
            assert torch.equal(image[1], image[0])
            assert int(item["action"]) == int(td["action"][start + t])
            assert float(item["next.reward"]) == float(td["next", "reward"][start + t])
            assert bool(item["next.done"]) == bool(td["next", "done"][start + t])
            assert int(item["episode_index"]) == e and item["task"] == "Pong"
            k += 1


def test_openx_round_trip_tasks_and_cameras(root, tmp_path):
    sel = select_episodes(ROWS + " WHERE source = 'openx' ORDER BY episode", root=root)
    request = ExportRequest("stretch", str(root), _rows(sel))
    export_lerobot(request, tmp_path / "stretch", workers=1)
    ds = _load(request, tmp_path / "stretch")
    td = open_ted("openx", "cmu_stretch", root)
    from episode_warehouse.catalog import run_query

    _, instructions = run_query(
        LocalRoot(root),
        "SELECT language_instruction FROM episodes WHERE source = 'openx' ORDER BY episode",
    )
    for i in range(len(ds)):
        item = ds[i]
        for camera in ("image", "wrist"):
            image = (item[f"observation.images.{camera}"] * 255).round().to(torch.uint8)
            assert torch.equal(image, td["observation", camera][i]), (camera, i)
        np.testing.assert_allclose(
            item["observation.state"].numpy(),
            td["observation", "state"][i].numpy().astype(np.float32),
        )
        assert item["task"] == instructions[int(item["episode_index"])][0]


def test_video_mode_is_within_tolerance(root, tmp_path):
    sel = select_episodes(ROWS + " WHERE source = 'atari' AND episode < 2 ORDER BY 3", root=root)
    request = ExportRequest("pong3-video", str(root), _rows(sel), video=True)
    export_lerobot(request, tmp_path / "v", workers=1)
    ds = _load(request, tmp_path / "v")
    td = open_ted("atari", "Pong/3", root)
    errors = [
        ((ds[i]["observation.image"][0] * 255) - td["observation"][i].float()).abs().mean()
        for i in range(0, len(ds), 7)
    ]
    assert max(errors) < 12.0  # AV1 at crf 30 is lossy: mean abs error per pixel (of 255)


def _first_episode(root):
    return _rows(select_episodes(ROWS + " WHERE source = 'atari' AND episode = 0", root=root))


def test_bad_input_writes_nothing(root, tmp_path):
    with pytest.raises(NotMaterializedError, match="atari:Pong/4"):
        Selection.from_rows([("atari", "Pong/4", 0, 0, 3)], root=root)
    with pytest.raises(ExportError, match="no episode"):
        export_lerobot(ExportRequest("empty", str(root), []), tmp_path / "empty")
    with pytest.raises(PartitionKeyError, match="export name"):
        export_lerobot(
            ExportRequest("../x", str(root), [("atari", "Pong/3", 0, 0, 3)]), tmp_path / "x"
        )
    other = tmp_path / "taken"
    other.mkdir()
    (other / "something.txt").write_text("not ours")
    with pytest.raises(ForeignArtifactError, match="did not write"):
        export_lerobot(ExportRequest("taken", str(root), _first_episode(root)), other)
    # nothing but the (hidden, empty) writer lock file next to the destination
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".lock-")) == [
        "taken"
    ]
    assert sorted(p.name for p in other.iterdir()) == ["something.txt"]


def test_reexport_of_same_selection_is_kept_and_a_different_one_refused(root, tmp_path):
    rows = _first_episode(root)
    first = export_lerobot(ExportRequest("same", str(root), rows), tmp_path / "same", workers=1)
    assert first.rebuilt
    mtime = (tmp_path / "same" / "meta" / "info.json").stat().st_mtime_ns
    again = export_lerobot(ExportRequest("same", str(root), rows), tmp_path / "same", workers=1)
    assert again.meta == first.meta and not again.rebuilt
    assert (tmp_path / "same" / "meta" / "info.json").stat().st_mtime_ns == mtime


def _scratch_dirs() -> set[str]:
    """This process's export scratch folders (other test processes export at the same time)."""
    shm = Path("/dev/shm")
    mine = f"episode-warehouse-frames-{os.getpid()}-*"
    return {p.name for p in shm.glob(mine)} if shm.is_dir() else set()


@pytest.mark.parametrize("source", ["atari", "openx"])
def test_export_equals_lerobots_per_frame_path(root, tmp_path, source, monkeypatch):
    """Same parquet tables, statistics and metadata as add_frame + save_episode per frame."""
    from lerobot.datasets import dataset_writer, io_utils

    from episode_warehouse.export import frames as export_frames

    # small PNG jobs, so that episodes (20-70 frames) are split across workers
    monkeypatch.setattr(export_frames, "CHUNK_FRAMES", 16)
    sel = select_episodes(ROWS + f" WHERE source = '{source}' ORDER BY episode", root=root)
    rows = _rows(sel)
    request = ExportRequest(f"same-{source}", str(root), rows)
    before = _scratch_dirs()
    export_lerobot(request, tmp_path / "ours", workers=2)
    write_per_frame(request.repo_id, root, rows, tmp_path / "reference")
    assert differing_files(tmp_path / "reference", tmp_path / "ours") == []
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == [
        "croissant.json",
        "data",
        "meta",
    ]
    assert _scratch_dirs() == before  # the PNG frames are gone
    assert dataset_writer.embed_images is io_utils.embed_images  # lerobot restored


def test_without_dev_shm_frames_go_to_the_staging_folder(root, tmp_path, monkeypatch):
    from episode_warehouse.export import frames as export_frames

    monkeypatch.setattr(export_frames, "SHM", tmp_path / "no-shm")
    rows = _rows(select_episodes(ROWS + " WHERE source = 'atari' ORDER BY episode", root=root))
    request = ExportRequest("no-shm", str(root), rows)
    export_lerobot(request, tmp_path / "ours", workers=1)
    write_per_frame(request.repo_id, root, rows, tmp_path / "reference")
    assert differing_files(tmp_path / "reference", tmp_path / "ours") == []
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == [
        "croissant.json",
        "data",
        "meta",
    ]


def test_a_broken_ted_leaves_nothing(root, tmp_path):
    """A TED frame file cut short: the error names it, and nothing is left behind."""
    broken = tmp_path / "wh"
    shutil.copytree(root, broken)
    frames = broken / "ted" / "atari" / "Pong" / "3" / "observation.frames"
    os.truncate(frames, frames.stat().st_size // 2)
    sel = select_episodes(ROWS + " WHERE source = 'atari' ORDER BY episode", root=broken)
    rows = _rows(sel)
    before = _scratch_dirs()
    with pytest.raises(CorruptInputError, match="observation.frames"):
        export_lerobot(ExportRequest("broken", str(broken), rows), tmp_path / "out", workers=2)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".lock-")] == ["wh"]
    assert _scratch_dirs() == before


def test_png_writers_report_a_failed_job_and_keep_working(root, tmp_path):
    """A worker that cannot read its frames answers with the error; the next job still runs."""
    from PIL import Image

    from episode_warehouse.export.png_writer import GRAY, PngWriters

    ted = root / "ted" / "atari" / "Pong" / "3"
    job = {
        "ted": str(ted),
        "file": "missing.npy",
        "start": 0,
        "length": 2,
        "first_frame": 0,
        "layout": GRAY,
        "dir": str(tmp_path / "frames"),
        "pattern": "frame-{frame_index:06d}.png",
        "compress_level": 6,
    }
    with PngWriters(1) as writers:
        with pytest.raises(CorruptInputError, match="missing.npy.*No such file"):
            writers.submit(job).result()
        good = {**job, "file": "observation.frames", "start": 5}
        writers.submit(good).result()
        # finish: whichever side writes a job (worker, or this process for one not yet
        # started), a failure is the same error
        jobs = [{**good, "dir": str(tmp_path / "more")}, job]
        with pytest.raises(CorruptInputError, match="missing.npy.*No such file"):
            writers.finish(jobs, [writers.submit(j) for j in jobs])
    written = np.asarray(Image.open(tmp_path / "frames" / "frame-000001.png"))
    expected = open_ted("atari", "Pong/3", root)["observation"][6].numpy()
    assert written.shape == (*expected.shape, 3)
    assert all(np.array_equal(written[..., c], expected) for c in range(3))


def test_another_lerobot_version_takes_the_plain_per_frame_path(root, tmp_path, monkeypatch):
    """The fast path's lerobot internals are used only on the version they were checked on."""
    from lerobot.datasets import dataset_writer

    from episode_warehouse.export import lerobot_compat
    from episode_warehouse.export.png_writer import PngWriters

    def refuse(*args, **kwargs):
        raise AssertionError("the fast path ran")

    original = dataset_writer.embed_images
    monkeypatch.setattr(lerobot_compat, "installed_version", lambda: "0.7.0")
    monkeypatch.setattr(PngWriters, "__init__", refuse)
    rows = _rows(select_episodes(ROWS + " WHERE source = 'atari' ORDER BY episode", root=root))
    request = ExportRequest("other-lerobot", str(root), rows)
    export_lerobot(request, tmp_path / "ours", workers=2)
    write_per_frame(request.repo_id, root, rows, tmp_path / "reference")
    assert differing_files(tmp_path / "reference", tmp_path / "ours") == []
    assert dataset_writer.embed_images is original
    assert not lerobot_compat.fast_path_available()
    monkeypatch.setattr(lerobot_compat, "installed_version", lambda: "0.6.1")
    assert lerobot_compat.fast_path_available()


def test_a_lerobot_video_source_exports_its_decoded_frames(tmp_path, lerobot_video):
    """A LeRobot dataset whose cameras are AV1 video, through every stage to an export (#69
    item 8): the PNG jobs opened the frame file by a second reader that dropped the camera's
    video files, and the export failed calling the frames damaged. The export's frames are the
    pixels LeRobotDataset decodes from the source's MP4s."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from tests.helpers import VIDEO_SPEC as spec
    from tests.helpers import build_lerobot

    root = tmp_path / "wh"
    build_lerobot(root, spec, lerobot_video)
    sel = select_episodes(ROWS + " ORDER BY episode", root=root)
    request = ExportRequest("clips", str(root), _rows(sel))
    export_lerobot(request, tmp_path / "out", workers=2)
    ours = _load(request, tmp_path / "out")
    theirs = LeRobotDataset(spec.repo_id, root=lerobot_video)
    assert len(ours) == len(theirs) == sum(spec.lengths)
    for i in range(len(theirs)):
        a, b = ours[i], theirs[i]
        for camera in spec.cameras:
            key = f"observation.images.{camera}"
            assert torch.equal(a[key], b[key]), (i, camera)
        assert torch.equal(a["action"], b["action"]), i
