"""Frames stored encoded, read from a gs:// root (the GCS emulator) by byte ranges: a JPEG
camera's sampled frame costs its stored bytes, and a LeRobot video camera decodes from the MP4
kept beside the TED, read by ranges, with nothing downloaded whole."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.storage import parse_root
from episode_warehouse.ted.reader import TedReader
from tests.bucket.conftest import layout_of
from tests.helpers import VIDEO_SPEC, build_lerobot

pytestmark = pytest.mark.integration

SPEC = VIDEO_SPEC


def test_a_video_camera_streams_from_the_bucket_by_ranges(
    bucket_url, tmp_path, monkeypatch, lerobot_video
):
    layout = layout_of(bucket_url)
    build_lerobot(layout, SPEC, lerobot_video)
    truth = open_ted("lerobot", SPEC.repo_id, root=bucket_url)  # the whole TED, checked
    shutil.rmtree(layout.folder)  # another machine: no local copy, an empty cache
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "elsewhere" / "copy"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "elsewhere" / "cache"))
    reader = TedReader.of(parse_root(bucket_url), "lerobot", SPEC.repo_id)
    episodes = reader.episodes().to_pylist()
    last = episodes[-1]
    rows = reader.read(last["start"], last["length"])
    for cam in SPEC.cameras:
        key = ("observation", "image", cam)
        want = truth[key][last["start"] : last["start"] + last["length"]].numpy()
        np.testing.assert_array_equal(rows[key][:].numpy(), want)
    ted_bytes = sum(
        f["size"] for f in reader.record["published"]["files"].values()
    )  # every file of the version
    assert 0 < reader.bytes_fetched < ted_bytes
    assert not (tmp_path / "elsewhere" / "cache").exists() or not any(
        p.is_file() for p in (tmp_path / "elsewhere" / "cache").rglob("*")
    )
