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


def test_verified_reads_fetch_a_cameras_checksums_once(bucket_url, shared_samples, tmp_path,
                                                       monkeypatch):  # fmt: skip
    """With ``EPISODE_WAREHOUSE_VERIFY_FRAMES`` on, a reader of a bucket root fetches each JPEG
    camera's CRC-32C file once (its header read, then its rows), however many episodes it
    reads: every episode of taco_play read verified costs exactly that file's bytes more than
    read unverified (each episode's fetch fetched the whole file again before), and the
    frames are the same."""
    from tests.episode_warehouse.standardized.conftest import build_ted, features_json
    from warehouse_fixtures.oxe_from_features import write_from_features

    name = "taco_play"
    write_from_features(tmp_path / "src", name, features_json(shared_samples, name), [5, 4, 6])
    layout = layout_of(bucket_url)
    build_ted(layout, tmp_path / "src", name)
    shutil.rmtree(layout.folder)  # another machine: nothing local

    def read_all(verify: str):
        monkeypatch.setenv("EPISODE_WAREHOUSE_VERIFY_FRAMES", verify)
        reader = TedReader.of(parse_root(bucket_url), "openx", name)
        rows = [reader.read(e["start"], e["length"]) for e in reader.episodes().to_pylist()]
        return reader, rows

    plain, unverified = read_all("0")
    checked, verified = read_all("1")
    files = checked.record["published"]["files"]
    sums = [f for f in files if f.endswith(".crc32c.npy")]
    cameras = [f for f in files if f.endswith(".frames")]
    assert len(sums) == len(cameras) >= 2
    header = sum(min(4096, files[f]["size"]) for f in sums)  # one header read a file
    rows_bytes = sum(4 * (checked.rows + 1) for _ in sums)  # 4 bytes a frame (+ the last next)
    assert checked.bytes_fetched - plain.bytes_fetched == header + rows_bytes
    for a, b in zip(unverified, verified, strict=True):
        for key in a.keys(True, True):
            assert (a.get(key) == b.get(key)).all(), key


def test_an_episodes_rows_cost_one_request_a_camera_and_embeddings_come_in_blocks(
    bucket_url, gcs_endpoint, shared_samples, tmp_path, monkeypatch
):
    """Reading every episode of taco_play from a bucket costs one range request an episode for
    each camera's frames and each array of large rows (its depth images: 120 KB a step); every
    file whose rows are small next to a frame (actions, flags, the 2 KB-a-step language
    embedding) costs its header and one block, however many episodes are read (the embedding
    cost one request an episode before: #72)."""
    from tests.episode_warehouse.standardized.conftest import build_ted, features_json
    from tests.reliability.fault_proxy import FaultProxy
    from warehouse_fixtures.oxe_from_features import write_from_features

    name, lengths = "taco_play", [5, 4, 6, 7, 3]
    write_from_features(tmp_path / "src", name, features_json(shared_samples, name), lengths)
    layout = layout_of(bucket_url)
    build_ted(layout, tmp_path / "src", name)
    local = next(layout.folder.rglob(f"ted/openx/{name}"))
    row_bytes = {  # each per-step array's bytes a row, from the files as built
        p.relative_to(local).as_posix(): np.load(p, mmap_mode="r")[0].nbytes
        for p in local.rglob("*.npy")
        if not p.name.endswith((".offsets.npy", ".crc32c.npy"))
    }
    assert row_bytes["observation/natural_language_embedding.npy"] == 2048  # 512 float32
    shutil.rmtree(layout.folder)  # another machine: nothing local
    with FaultProxy(gcs_endpoint, []) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        reader = TedReader.of(parse_root(bucket_url), "openx", name)
        episodes = reader.episodes().to_pylist()
        for e in episodes:
            reader.read(e["start"], e["length"])
    reads = {n.split("/.v/", 1)[-1].split("/", 1)[-1]: k for n, k in proxy.media_reads.items()
             if f"/{name}/.v/" in n}  # fmt: skip
    assert len(episodes) == len(lengths)
    cameras = [f for f in reads if f.endswith(".frames")]
    assert len(cameras) >= 2
    for camera in cameras:
        assert reads[camera] == len(lengths), camera
    large = [file for file, size in row_bytes.items() if size > 4096]
    assert large  # the depth camera, decoded
    for file, size in row_bytes.items():
        if file in large:  # a header read, then a range an episode
            assert reads[file] == 1 + len(lengths), (file, size)
        else:  # a header read, then one block (the file is under 512 rows)
            assert reads.get(file, 0) <= 2, (file, size, reads.get(file))
