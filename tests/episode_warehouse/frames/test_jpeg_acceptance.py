"""One acceptance rule for a JPEG (#69 item 1), owned by the codec table and followed by ingest,
the audit and every loader: the header read by libjpeg-turbo itself (a warning is a refusal), at
most MAX_JPEG_SCANS scans, the size checked before anything is allocated, a strict decode.

Before: ingest decoded with torchvision and the audit's sample with OpenCV (both ignore libjpeg's
warnings), the loaders strictly, and the size check parsed headers itself. Six stray bytes after
APP0 made the strict header read fail and the frame fall through to the lenient decoder (a cut
scan came out two-thirds grey); a cut, random or misordered scan ending in EOI was ingested and
audited clean, then refused in training; a hidden frame header passed ``max_image_pixels``; and
10,000 empty progressive scans decoded, slowly, everywhere."""

from __future__ import annotations

import io
import itertools
import pickle
import tarfile

import numpy as np
import pytest
from PIL import Image

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.frames.codec import (
    MAX_JPEG_SCANS,
    declared,
    decode_frame,
    decode_frames_into,
    decode_preview,
    decode_published,
)
from warehouse_fixtures import hostile_jpeg

KINDS = sorted(hostile_jpeg.KINDS)
# refused from the header, before the decoder runs: nothing of the frame is written anywhere
BY_HEADER = {"stray bytes after APP0", "a hidden frame header", "10,000 empty scans"}


def _pixels(seed: int, height: int = 48, width: int = 64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.kron(rng.integers(0, 256, (height // 8, width // 8, 3)), np.ones((8, 8, 1))).astype(
        np.uint8
    )


def _jpeg(pixels: np.ndarray, **options) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90, **options)
    return out.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_every_reader_of_the_frames_layer_refuses_it(kind):
    pixels = _pixels(1)
    bad = hostile_jpeg.KINDS[kind](pixels)
    assert bad.startswith(b"\xff\xd8") and bad.endswith(b"\xff\xd9")
    shape, u8 = (3, 48, 64), np.dtype(np.uint8)
    good = _jpeg(pixels)
    want = np.asarray(Image.open(io.BytesIO(good))).transpose(2, 0, 1)  # PIL: libjpeg's pixels
    np.testing.assert_array_equal(decode_frame(good, shape, u8, "f"), want)
    if kind in BY_HEADER:
        with pytest.raises(CorruptInputError):
            declared(bad, "cam row 7")
    with pytest.raises(CorruptInputError, match="cam row 7"):
        decode_frame(bad, shape, u8, "cam row 7")
    with pytest.raises(CorruptInputError, match="cam row 7"):
        decode_preview(bad, shape, u8, "cam row 7")  # the audit's and the hashes' sample
    with pytest.raises(CorruptInputError, match="cam row 7"):
        decode_published(bad, "cam row 7", 4096 * 4096)  # ingest
    for memory in (np.full((3, 48, 64, 3), 9, np.uint8), np.full((3, 3, 48, 64), 9, np.uint8)):
        out = memory.transpose(0, 3, 1, 2) if memory.shape[-1] == 3 else memory
        with pytest.raises(CorruptInputError, match="row 1"):  # a batch's run, and per frame
            decode_frames_into([good, bad, good], out, [0, 1, 2], shape, u8, lambda k: f"row {k}")
        np.testing.assert_array_equal(out[0], want)  # the good frame before it
        if kind in BY_HEADER:
            assert (out[1] == 9).all() and (out[2] == 9).all()  # nothing of it written


def test_the_scan_bound_is_where_it_says():
    pixels = _pixels(2)
    ok = hostile_jpeg.empty_scans(pixels, scans=MAX_JPEG_SCANS - 10)  # 10 scans of its own
    np.testing.assert_array_equal(
        decode_frame(ok, (3, 48, 64), np.dtype(np.uint8), "f"),
        decode_frame(_jpeg(pixels, progressive=True), (3, 48, 64), np.dtype(np.uint8), "f"),
    )  # the empty scans change nothing: a valid frame, refused only for its cost
    with pytest.raises(LimitExceededError, match=f"65 scans, over the {MAX_JPEG_SCANS}"):
        declared(hostile_jpeg.empty_scans(pixels, scans=MAX_JPEG_SCANS - 9), "f")


def test_a_hidden_frame_header_is_read_as_the_decoder_reads_it():
    """The decoder itself reads the header (it sees the hidden 16000x16000 one and refuses the
    file); the parser of our own that it replaces skipped it and believed 48x64."""
    bad = hostile_jpeg.hidden_frame_header(_pixels(3))
    with pytest.raises(CorruptInputError, match="header does not read"):
        declared(bad, "f")


@pytest.mark.integration  # the decoded stage's worker pool
@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_frame_is_refused_at_ingest(kind, tmp_path, monkeypatch):
    """DROID's first camera at step 7 replaced by the hostile frame of its own pixels: the build
    stops naming the shard, the step and the camera, and publishes nothing."""
    from episode_warehouse.paths import WarehouseLayout
    from tests.helpers import build_openx_stages
    from warehouse_fixtures import rlds_writer as w
    from warehouse_fixtures.droid import write_droid

    calls, real = itertools.count(), w.encode_image

    def encode(pixels, fmt):  # the 8th image the writer encodes: the first camera's step 7
        return hostile_jpeg.KINDS[kind](pixels) if next(calls) == 7 else real(pixels, fmt)

    monkeypatch.setattr(w, "encode_image", encode)
    write_droid(tmp_path / "src", shards=1, per_shard=1)
    layout = WarehouseLayout.local(tmp_path / "wh")
    with pytest.raises(CorruptInputError) as err:
        build_openx_stages(layout, tmp_path / "src", "droid")
    message = str(err.value)
    assert "droid-train.tfrecord-00000-of-00001" in message
    assert "step 7" in message and "exterior_image_1_left" in message
    assert not (layout.decoded_dir("openx", "droid") / "meta.json").exists()


@pytest.mark.integration  # the catalog stage's sandboxed query
def test_a_planted_frame_is_refused_by_the_loaders_and_found_by_the_audit(tmp_path):
    """Frames planted in a published TED (the bucket's writer is anyone with access): every
    loader refuses each, the batch as the frame alone, and the audit's decoded sample (half way
    through each episode) finds each as a bad frame, where OpenCV's lenient preview found none."""
    from episode_warehouse import open_ted
    from episode_warehouse.curation.audit import audit_partition
    from episode_warehouse.curation.partition_arrays import PartitionArrays
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards
    from tests.helpers import _publish
    from warehouse_fixtures.openx_writer import DatasetSpec, add_member, make_episode

    spec = DatasetSpec("acceptance", cameras=("image",), image_size=32, image_format="JPEG")
    rng = np.random.default_rng(4)
    src = tmp_path / "src" / spec.name
    src.mkdir(parents=True)
    with tarfile.open(src / f"{spec.name}_00000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(len(KINDS)):
            episode = pickle.dumps(make_episode(rng, spec, 20), protocol=4)
            add_member(tar, f"{spec.name}_{i:06d}.data.pickle", episode)
    layout = WarehouseLayout.local(tmp_path / "wh")
    shards = list_shards(str(tmp_path / "src"), spec.name).shards
    _publish(layout, "openx", spec.name, lambda dec: decode_shards(shards, dec), 0)

    folder = layout.ted_dir("openx", spec.name)
    frames, offsets_file = (
        folder / "observation" / "image.frames",
        folder / "observation" / ("image.offsets.npy"),
    )
    offsets = np.load(offsets_file)
    blobs = [frames.read_bytes()[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    td = open_ted("openx", spec.name, layout.folder)
    planted = {}
    for e, kind in enumerate(KINDS):  # step 10 of episode e: the audit's half-way sample
        row = 20 * e + 10
        pixels = np.ascontiguousarray(td["observation", "image"][row].numpy().transpose(1, 2, 0))
        blobs[row] = hostile_jpeg.KINDS[kind](pixels)
        planted[row] = kind
    frames.unlink()  # (a hard link shared with the decoded stage: write a new file)
    frames.write_bytes(b"".join(blobs))
    offsets_file.unlink()
    np.save(offsets_file, np.concatenate([[0], np.cumsum([len(b) for b in blobs])]))

    td = open_ted("openx", spec.name, layout.folder)
    camera = td["observation", "image"]
    for row in planted:
        with pytest.raises(CorruptInputError, match=f"row {row}"):
            camera[row]  # one frame
        with pytest.raises(CorruptInputError, match=f"row {row}"):
            camera[[row - 1, row, row + 1]]  # a batch of them, one decoder run
        camera[row - 1]  # its neighbours are fine
    found = audit_partition(PartitionArrays.open(folder), fps=None).by_episode
    for e, kind in enumerate(KINDS):
        assert [(f["kind"], f["step"]) for f in found[e]] == [("bad_frame", 10)], kind
