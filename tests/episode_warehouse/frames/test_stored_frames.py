"""Frames stored encoded, on files others wrote (../shared/samples): the real RLDS samples (PNG
bridge, JPEG mt_opt) and the real RL Unplugged Asterix files, each built twice, with frames
stored encoded and decoded (``EPISODE_WAREHOUSE_FRAMES``), and compared pixel for pixel, with
the stored bytes compared to the bytes the source published."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.curation.audit import audit_partition
from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.frames.rows import offsets_file
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.settings import FRAMES_ENV
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.ted.open import open_ted_folder
from episode_warehouse.tfrecord.example import parse_example
from episode_warehouse.tfrecord.records import iter_records
from tests.episode_warehouse.sources.openx.test_rlds_samples import mt_opt  # noqa: F401


def _openx(monkeypatch, src, name, folder, frames):
    monkeypatch.setenv(FRAMES_ENV, frames)
    layout = WarehouseLayout.local(folder)
    mirror_openx(str(src), name, layout.raw_dir("openx", name), root=layout.root, code_version="t")
    decode_openx(layout, name, code_version="t")
    build_ted_stage(layout, "openx", name, code_version="t")
    return layout.ted_dir("openx", name)


def _published(shard, key="steps/observation/image") -> list[bytes]:
    with open(shard, "rb") as fh:
        records = [parse_example(d).features.feature for _, d in iter_records(fh, str(shard))]
    return [bytes(b) for r in records for b in r[key].bytes_list.value]


def _frames_of(ted, key):
    frames = ted / f"{key}.frames"
    offsets = np.load(ted / offsets_file(f"{key}.frames"))
    data = frames.read_bytes()
    return [data[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


@pytest.mark.parametrize("dataset", ["bridge", "mt_opt_rlds"])
def test_rlds_frames_are_the_published_bytes_and_decode_to_the_decoded_layout(
    dataset,
    shared_samples,
    mt_opt,  # noqa: F811
    monkeypatch,
    tmp_path,
):
    if dataset == "bridge":
        src = shared_samples / "rlds"
        shard = src / "bridge/1.0.0/bridge-train.tfrecord-00000-of-00001"
    else:
        src, shard = mt_opt[0], mt_opt[1]
    encoded = _openx(monkeypatch, src, dataset, tmp_path / "enc", "encoded")
    decoded = _openx(monkeypatch, src, dataset, tmp_path / "dec", "decoded")
    published = _published(shard)
    stored = _frames_of(encoded, "observation/image")
    assert stored[:-1] == published and stored[-1] == b""  # + the observation's empty last row
    assert not (encoded / "observation/image.npy").exists()
    ours, plain = open_ted_folder(encoded), open_ted_folder(decoded)
    assert (decoded / "observation/image.npy").exists()
    for key in (("observation", "image"), ("next", "observation", "image")):
        np.testing.assert_array_equal(ours[key].numpy(), plain[key].numpy())
    # the source's own reader (libjpeg's accurate IDCT through PIL, as TensorFlow's
    # INTEGER_ACCURATE decodes): frame for frame
    for t in (0, len(published) - 1):
        pil = np.asarray(Image.open(io.BytesIO(published[t])).convert("RGB")).transpose(2, 0, 1)
        np.testing.assert_array_equal(ours["observation", "image"][t].numpy(), pil)
    # disk: the camera's bytes against what was published (offsets included)
    camera = (encoded / "observation/image.frames").stat().st_size + (
        encoded / "observation/image.offsets.npy"
    ).stat().st_size
    assert camera <= 1.10 * sum(map(len, published))
    raw_frames = (decoded / "observation/image.npy").stat().st_size
    assert camera < raw_frames / 3
    # files others wrote hold no frame defect the integrity audit knows (#60), in either
    # layout (bridge's sample has a 3-step episode: short, as the audit says, not a frame's)
    for ted in (encoded, decoded):
        found = audit_partition(PartitionArrays.open(ted), None).by_episode
        frames = [[f for f in fs if f["kind"] != "short_episode"] for fs in found]
        assert frames == [[]] * len(pq.read_table(ted / "episodes.parquet"))


@pytest.mark.integration  # the RL Unplugged decoder's worker processes
def test_atari_frames_compressed_once_equal_the_decoded_layout(
    shared_samples, monkeypatch, tmp_path
):
    """The real RL Unplugged Asterix frames (PNGs the source decodes): stored compressed once,
    lossless; both layouts give the same TED, and the encoded camera is under 0.25x the raw."""
    store = open_blob_store(str(shared_samples / "rl_unplugged_atari"))
    teds = {}
    for frames in ("encoded", "decoded"):
        monkeypatch.setenv(FRAMES_ENV, frames)
        layout = WarehouseLayout.local(tmp_path / frames)
        target = layout.raw_dir("atari", "Asterix/2")
        mirror_run(store, "Asterix", 2, target, CheckpointSubset("all"), root=layout.root,
                   code_version="t")  # fmt: skip
        decode_atari(layout, "Asterix/2", code_version="t", workers=2)
        build_ted_stage(layout, "atari", "Asterix/2", code_version="t")
        teds[frames] = layout.ted_dir("atari", "Asterix/2")
    ours, plain = open_ted_folder(teds["encoded"]), open_ted_folder(teds["decoded"])
    assert ours.batch_size == plain.batch_size == (554,)
    for key in ("observation", ("next", "observation")):
        np.testing.assert_array_equal(ours[key].numpy(), plain[key].numpy())
    index = np.random.default_rng(0).integers(0, 554, 64)
    np.testing.assert_array_equal(ours[index]["observation"], plain[index]["observation"])
    encoded = (teds["encoded"] / "observation.frames").stat().st_size
    raw = (teds["decoded"] / "observation.npy").stat().st_size
    assert encoded <= 0.25 * raw
    for ted in teds.values():  # the real episodes hold no defect the audit knows (#60)
        assert audit_partition(PartitionArrays.open(ted), 15.0).by_episode == [[], []]


def _lerobot_ted(dataset, work, frames):
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.ted import build_ted

    source = open_lerobot_folder(dataset)
    decode = lambda tmp: decode_lerobot(source, tmp)  # noqa: E731
    build_if_changed(LocalRoot(work), work / "dec", {"frames": frames}, decode)
    (work / "ted").mkdir()
    build_ted(open_decoded(work / "dec"), work / "ted")
    return work / "ted"


@pytest.mark.integration  # lerobot's writer encodes video in a child process
def test_lerobot_video_frames_are_references_into_its_mp4s(monkeypatch, tmp_path, lerobot_video):
    """A LeRobot v3 dataset written by lerobot's own writer (AV1 video): the TED keeps its MP4
    files as they are and 12 bytes a frame; frames decode to the decoded layout's pixels and
    to what LeRobotDataset returns for them."""
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from tests.helpers import VIDEO_SPEC as spec

    dataset = lerobot_video
    teds = {}
    for frames in ("encoded", "decoded"):
        monkeypatch.setenv(FRAMES_ENV, frames)
        teds[frames] = _lerobot_ted(dataset, tmp_path / frames, frames)
    ours, plain = open_ted_folder(teds["encoded"]), open_ted_folder(teds["decoded"])
    theirs = LeRobotDataset(spec.repo_id, root=dataset)
    for cam in spec.cameras:
        key = ("observation", "image", cam)
        np.testing.assert_array_equal(ours[key].numpy(), plain[key].numpy())
        np.testing.assert_array_equal(ours["next", *key].numpy(), plain["next", *key].numpy())
        mp4s = sorted((dataset / "videos" / f"observation.images.{cam}").rglob("*.mp4"))
        kept = sorted((teds["encoded"] / "videos" / f"observation.images.{cam}").rglob("*.mp4"))
        assert [p.read_bytes() for p in kept] == [p.read_bytes() for p in mp4s]
        refs = _frames_of(teds["encoded"], f"observation/image/{cam}")
        assert {len(r) for r in refs[:-1]} == {12} and all(r.startswith(b"EWVR") for r in refs[:-1])
        camera = sum(p.stat().st_size for p in kept) + sum(map(len, refs))
        assert camera <= 1.10 * sum(p.stat().st_size for p in mp4s) + 8 * len(refs) + 4096
    for i in (0, 7, len(theirs) - 1):  # random access: each frame seeks in its file
        frame = theirs[i]
        for cam in spec.cameras:
            pixels = (frame[f"observation.images.{cam}"] * 255).round().to(torch.uint8)
            assert torch.equal(ours["observation", "image", cam][i], pixels), (i, cam)


@pytest.mark.integration  # torchrl starts a process when it is imported
def test_torchrl_samples_an_encoded_ted_as_the_decoded_one(shared_samples, monkeypatch, tmp_path):
    """TorchRL's ReplayBuffer over the encoded TED (its camera decoded as the storage indexes
    it) gives the decoded layout's rows at the indices it sampled."""
    from torchrl.data import ReplayBuffer, SliceSampler, TensorStorage

    src = shared_samples / "rlds"
    encoded = open_ted_folder(_openx(monkeypatch, src, "bridge", tmp_path / "enc", "encoded"))
    plain = open_ted_folder(_openx(monkeypatch, src, "bridge", tmp_path / "dec", "decoded"))
    buffer = ReplayBuffer(
        storage=TensorStorage(encoded),
        sampler=SliceSampler(slice_len=2, traj_key="episode", strict_length=True),
        batch_size=4,
    )
    batch, info = buffer.sample(return_info=True)
    index = info["index"]
    index = index[0] if isinstance(index, tuple) else index
    want = plain[index]
    assert ("observation", "image") in want.keys(True, True)
    for key in want.keys(True, True):  # every leaf, the camera and its next frame included
        np.testing.assert_array_equal(batch[key].numpy(), want[key].numpy(), err_msg=str(key))
