"""One stored frame's bytes: decoded exactly, refused when they are not what the camera's rows
are (naming the frame), never decoded past a header that declares another size."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from tensordict import TensorDict

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames import FrameRows, FrameTensor, decode_frame, encode_pixels
from episode_warehouse.frames.codec import CODECS, codec_of, decode_frames_into, kind


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def _jpeg(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90)
    return out.getvalue()


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_pixels_compressed_once_come_back_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    row = (rng.standard_normal((3, 5, 7)) * 1000).astype(dtype)
    blob = encode_pixels(row)
    assert kind(blob) == "zstd"
    back = decode_frame(blob, row.shape, row.dtype, "frame 0")
    assert back.dtype == row.dtype and back.tobytes() == row.tobytes()


def test_jpeg_and_png_decode_as_pil_decodes_them():
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, (24, 32), dtype=np.uint8)
    np.testing.assert_array_equal(decode_frame(_png(rgb), (3, 24, 32), "uint8", "f"),
                                  rgb.transpose(2, 0, 1))  # fmt: skip
    np.testing.assert_array_equal(decode_frame(_png(grey), (24, 32), "uint8", "f"), grey)
    jpeg = _jpeg(rgb)  # libjpeg's accurate integer IDCT on both sides
    pil = np.asarray(Image.open(io.BytesIO(jpeg))).transpose(2, 0, 1)
    np.testing.assert_array_equal(decode_frame(jpeg, (3, 24, 32), "uint8", "f"), pil)
    assert not decode_frame(b"", (3, 24, 32), "uint8", "f").any()


def test_a_frame_declaring_another_size_is_refused_before_it_is_decoded():
    big = _png(np.zeros((2048, 2048), np.uint8))  # a 4-megapixel frame for a 24x32 camera
    with pytest.raises(CorruptInputError, match=r"ted/x/obs.frames row 3.*\(24, 32\)"):
        decode_frame(big, (24, 32), "uint8", "ted/x/obs.frames row 3")
    bomb = encode_pixels(np.zeros((4096, 4096), np.uint8))  # zstd: 16 MB from a few KB
    with pytest.raises(CorruptInputError, match="row 4"):
        decode_frame(bomb, (24, 32), "uint8", "row 4")


@pytest.mark.parametrize(
    "blob", [b"not an image", b"\xff\xd8\xff\xe0" + b"\0" * 40, encode_pixels(np.ones(8))[:-3]]
)
def test_bytes_that_do_not_decode_are_refused_naming_the_frame(blob):
    with pytest.raises(CorruptInputError, match="cam.frames row 9"):
        decode_frame(blob, (2, 4), "float64" if blob.startswith(b"\x28") else "uint8",
                     "cam.frames row 9")  # fmt: skip


def test_a_frame_tensor_decodes_what_it_is_indexed_with_inside_a_tensordict():
    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 256, (12, 3, 6, 8), dtype=np.uint8)
    blobs = [
        _png(p.transpose(1, 2, 0)) if i % 2 else encode_pixels(p) for i, p in enumerate(pixels)
    ]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(np.int64)
    data = b"".join(blobs)
    reads = []

    def read(a, b):
        reads.append((a, b))
        return data[a:b]

    camera = FrameTensor(FrameRows(offsets, read, (3, 6, 8), "uint8", "cam"))
    td = TensorDict({"pixels": camera, "step": torch.arange(12)}, batch_size=[12])
    assert td["pixels"].shape == (12, 3, 6, 8) and not reads  # opening decodes nothing
    index = torch.tensor([7, 2, 3, 11])
    np.testing.assert_array_equal(td[index]["pixels"].numpy(), pixels[[7, 2, 3, 11]])
    assert len(reads) == 3  # 2..3 are one run of rows: one read
    np.testing.assert_array_equal(td[4:6]["pixels"].numpy(), pixels[4:6])
    np.testing.assert_array_equal(camera[-1].numpy(), pixels[-1])
    assert camera.float().mean().item() == pytest.approx(pixels.mean())  # whole: decoded first
    stacked = torch.stack([td[0:2], td[5:7]])
    np.testing.assert_array_equal(stacked["pixels"][1].numpy(), pixels[5:7])


def test_one_table_knows_every_kind_of_stored_frame():
    """Every kind is one entry of CODECS (signature, media type, decoder): ``kind``, the
    decoder, the viewer's media types and the TED check's signatures all read it."""
    assert [c.kind for c in CODECS] == ["jpeg", "png", "zstd", "video"]
    picture = io.BytesIO()
    Image.fromarray(np.full((6, 8, 3), 90, np.uint8)).save(picture, format="PNG")
    blob = picture.getvalue()
    assert codec_of(blob).media_type == "image/png" and kind(blob) == "png"
    np.testing.assert_array_equal(decode_frame(blob, (3, 6, 8), np.uint8, "t"), 90)
    assert codec_of(b"GIF89a....") is None and kind(b"GIF89a....") == "unknown"
    assert kind(b"") == "empty"
    with pytest.raises(CorruptInputError, match="video reference outside a video camera"):
        decode_frame(b"EWVR" + bytes(8), (3, 6, 8), np.uint8, "t")


def _published_jpegs(samples) -> list[bytes]:
    """Every JPEG the TFDS authors' real RLDS sample shards hold (mt_opt's cameras)."""
    from episode_warehouse.tfrecord.example import parse_example
    from episode_warehouse.tfrecord.records import iter_records

    found = []
    for shard in sorted((samples / "rlds").glob("*/*/*.tfrecord-*")):
        with open(shard, "rb") as fh:
            for _, data in iter_records(fh, str(shard)):
                for feature in parse_example(data).features.feature.values():
                    values = feature.bytes_list.value
                    found += [bytes(b) for b in values if b[:3] == b"\xff\xd8\xff"]
    return found


def _reference(jpeg: bytes) -> np.ndarray:
    """torchvision's decode_image (its own libjpeg-turbo 2.0): (C, H, W)."""
    from torchvision.io import ImageReadMode, decode_image

    tensor = torch.frombuffer(bytearray(jpeg), dtype=torch.uint8)
    return decode_image(tensor, mode=ImageReadMode.UNCHANGED).numpy()


def test_a_jpeg_is_decoded_straight_into_channels_last_memory_with_the_reference_pixels(
    shared_samples,
):
    """#58: a JPEG row is written by libjpeg-turbo into the caller's memory (a batch's slot):
    the same pixels as torchvision's decode (the decoder before), on the published mt_opt
    frames and on every chroma subsampling, grey included, at odd sizes."""
    from episode_warehouse.frames.codec import decode_frame_into

    jpegs = _published_jpegs(shared_samples)
    assert len(jpegs) >= 40
    rng = np.random.default_rng(5)
    for subsampling in ("4:4:4", "4:2:2", "4:2:0"):
        for height, width in ((17, 29), (64, 80), (181, 320)):
            pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            out = io.BytesIO()
            Image.fromarray(pixels).save(out, "JPEG", quality=85, subsampling=subsampling)
            jpegs.append(out.getvalue())
    grey = _jpeg(rng.integers(0, 256, (33, 47), dtype=np.uint8))
    for jpeg in [*jpegs, grey]:
        want = _reference(jpeg)
        shape = want.shape if want.shape[0] == 3 else want.shape[1:]
        memory = np.zeros((*want.shape[1:], want.shape[0]), np.uint8)  # (H, W, C): a slot's
        row = memory.transpose(2, 0, 1) if len(shape) == 3 else memory[..., 0]
        decode_frame_into(memoryview(jpeg), row, shape, np.dtype(np.uint8), "f")
        np.testing.assert_array_equal(row, want.reshape(shape))
        assert np.shares_memory(row, memory)
        np.testing.assert_array_equal(decode_frame(jpeg, shape, "uint8", "f"), want.reshape(shape))
    # the decoder writes channels-last memory itself; channels-first memory is written by a
    # copy of the decoded frame (the same pixels)
    jpeg = jpegs[0]
    first = np.zeros(_reference(jpeg).shape, np.uint8)
    last = np.zeros((*first.shape[1:], first.shape[0]), np.uint8).transpose(2, 0, 1)
    into = codec_of(jpeg).decode_into
    assert into(jpeg, last, first.shape, "f") and not into(jpeg, first, first.shape, "f")
    decode_frame_into(jpeg, first, first.shape, np.dtype(np.uint8), "f")
    np.testing.assert_array_equal(first, _reference(jpeg))
    np.testing.assert_array_equal(last, first)


def test_a_jpeg_that_is_not_the_row_is_refused_before_anything_is_written():
    from episode_warehouse.frames.codec import decode_frame_into

    rng = np.random.default_rng(6)
    rgb = _jpeg(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8))
    memory = np.full((24, 32, 3), 7, np.uint8)
    row = memory.transpose(2, 0, 1)
    with pytest.raises(CorruptInputError, match=r"row 2.*\(3, 16, 32\)"):
        decode_frame_into(rgb, np.zeros((16, 32, 3), np.uint8).transpose(2, 0, 1), (3, 16, 32),
                          np.dtype(np.uint8), "cam.frames row 2")  # fmt: skip
    grey = _jpeg(rng.integers(0, 256, (24, 32), dtype=np.uint8))
    with pytest.raises(CorruptInputError, match="1 component"):
        decode_frame_into(grey, row, (3, 24, 32), np.dtype(np.uint8), "cam.frames row 3")
    assert (memory == 7).all()  # refused by the header: nothing written
    with pytest.raises(CorruptInputError, match="does not decode"):  # a cut frame, as before
        decode_frame_into(rgb[: len(rgb) // 2], row, (3, 24, 32), np.dtype(np.uint8), "row 4")


def _names(k: int) -> str:
    return f"cam.frames row {10 + k}"


def test_a_run_of_zstd_frames_decodes_as_each_frame_alone_into_its_place():
    rng = np.random.default_rng(5)
    rows = [rng.integers(0, 256, (6, 7), dtype=np.uint8) for _ in range(5)]
    blobs = [memoryview(encode_pixels(r)) for r in rows]
    out = np.zeros((8, 6, 7), np.uint8)
    decode_frames_into(blobs, out, [7, 0, 3, 1, 5], (6, 7), np.dtype("uint8"), _names)
    for row, place in zip(rows, [7, 0, 3, 1, 5], strict=True):
        np.testing.assert_array_equal(out[place], row)
    assert not out[[2, 4, 6]].any()  # nothing written elsewhere
    mixed = [blobs[0], memoryview(b""), memoryview(_png(rows[1]))]  # kinds mixed: one by one
    decode_frames_into(mixed, out, [0, 1, 2], (6, 7), np.dtype("uint8"), _names)
    np.testing.assert_array_equal(out[:3], np.stack([rows[0], np.zeros((6, 7)), rows[1]]))


@pytest.mark.parametrize(
    "bad, message",
    [
        (encode_pixels(np.zeros((4096, 4096), np.uint8)), r"row 12.*\(6, 7\)"),  # a bomb
        (encode_pixels(np.arange(42, dtype=np.uint8))[:-3], "row 12.*does not decode"),  # cut
        (encode_pixels(np.zeros((6, 8), np.uint8)), r"row 12.*48 bytes"),  # another size
    ],
)
def test_a_bad_frame_in_a_zstd_run_is_refused_naming_its_row(bad, message):
    good = encode_pixels(np.ones((6, 7), np.uint8))
    out = np.zeros((3, 6, 7), np.uint8)
    with pytest.raises(CorruptInputError, match=message):
        decode_frames_into([good, good, bad], out, [0, 1, 2], (6, 7), np.dtype("uint8"), _names)


def test_a_run_of_jpegs_decodes_as_each_frame_alone_into_its_place(shared_samples):
    """#58: a batch's JPEG frames handed to the codec table at once (``FrameRows.read_into``
    does so) land where each frame alone lands: the published mt_opt frames in channels-last
    memory (written by the decoder) and channels-first memory (copied), grey rows, and a
    4-channel (CMYK) camera, which libjpeg-turbo does not write in place."""
    from episode_warehouse.frames.codec import decode_frame, decode_frame_into

    jpegs = _published_jpegs(shared_samples)[:6]
    shape = _reference(jpegs[0]).shape
    blobs = [memoryview(j) for j in jpegs]
    places = [8, 0, 3, 1, 5, 2]
    want = [decode_frame(b, shape, np.uint8, "f") for b in blobs]
    last = np.zeros((9, *shape[1:], 3), np.uint8).transpose(0, 3, 1, 2)  # a slot's memory
    first = np.zeros((9, *shape), np.uint8)  # channels first: decoded, then copied
    for out in (last, first):
        decode_frames_into(blobs, out, places, shape, np.dtype("uint8"), _names)
        for frame, place in zip(want, places, strict=True):
            np.testing.assert_array_equal(out[place], frame)
        assert not out[[4, 6, 7]].any()  # nothing written elsewhere
    cmyk = []
    for seed in (1, 2):
        pixels = np.random.default_rng(seed).integers(0, 256, (20, 24, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).convert("CMYK").save(buffer, "JPEG", quality=90)
        cmyk.append(memoryview(buffer.getvalue()))
    out = np.zeros((2, 20, 24, 4), np.uint8).transpose(0, 3, 1, 2)
    decode_frames_into(cmyk, out, [1, 0], (4, 20, 24), np.dtype("uint8"), _names)
    for blob, place in zip(cmyk, [1, 0], strict=True):
        np.testing.assert_array_equal(out[place], decode_frame(blob, (4, 20, 24), "uint8", "f"))
    assert out.any()
    rng = np.random.default_rng(4)
    greys = [rng.integers(0, 256, (20, 24), dtype=np.uint8) for _ in range(3)]
    blobs = [memoryview(_jpeg(g)) for g in greys]
    out = np.zeros((3, 20, 24), np.uint8)
    decode_frames_into(blobs, out, [2, 0, 1], (20, 24), np.dtype("uint8"), _names)
    for blob, place in zip(blobs, [2, 0, 1], strict=True):
        np.testing.assert_array_equal(out[place], decode_frame(blob, (20, 24), "uint8", "f"))
    # a grey camera of (1, H, W) rows (as a TED may keep one): grey pixels, alone and in a run
    out = np.zeros((3, 1, 20, 24), np.uint8)
    decode_frames_into(blobs, out, [2, 0, 1], (1, 20, 24), np.dtype("uint8"), _names)
    for blob, place in zip(blobs, [2, 0, 1], strict=True):
        want = decode_frame(blob, (20, 24), "uint8", "f")
        np.testing.assert_array_equal(out[place, 0], want)
        row = np.zeros((1, 20, 24), np.uint8)
        decode_frame_into(blob, row, (1, 20, 24), np.dtype("uint8"), "f")
        np.testing.assert_array_equal(row[0], want)


def test_a_batch_led_by_a_jpeg_decodes_its_other_kinds_each_by_its_own_codec():
    """#58: the codec is looked up once for a batch's frames that share the first one's
    signature; an empty row, a PNG and a zstd frame among JPEG frames still decode by theirs."""
    rng = np.random.default_rng(8)
    rows = [rng.integers(0, 256, (20, 24, 3), dtype=np.uint8) for _ in range(5)]
    blobs = [
        memoryview(_jpeg(rows[0])),
        memoryview(b""),
        memoryview(_png(rows[2])),
        memoryview(_jpeg(rows[3])),
        memoryview(encode_pixels(rows[4].transpose(2, 0, 1))),
    ]
    shape = (3, 20, 24)
    want = [decode_frame(b, shape, np.uint8, "f") for b in blobs]
    out = np.full((6, 20, 24, 3), 7, np.uint8).transpose(0, 3, 1, 2)  # a slot's memory
    decode_frames_into(blobs, out, [5, 0, 3, 1, 2], shape, np.dtype("uint8"), _names)
    for frame, place in zip(want, [5, 0, 3, 1, 2], strict=True):
        np.testing.assert_array_equal(out[place], frame)
    np.testing.assert_array_equal(out[3], rows[2].transpose(2, 0, 1))  # the PNG, exactly
    assert not out[0].any() and (out[4] == 7).all()  # the empty row zeros; nothing elsewhere


@pytest.mark.parametrize("bad, message", [("small", r"row 12.*\(3, 24, 32\)"),
                                          ("grey", "row 12.*1 component"),
                                          ("cut", "row 12.*does not decode"),
                                          ("garbled", "row 12.*header does not read")])  # fmt: skip
def test_a_bad_frame_in_a_jpeg_run_is_refused_naming_its_row(bad, message):
    rng = np.random.default_rng(6)
    good = _jpeg(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8))
    frames = {"small": _jpeg(rng.integers(0, 256, (16, 32, 3), dtype=np.uint8)),
              "grey": _jpeg(rng.integers(0, 256, (24, 32), dtype=np.uint8)),
              "cut": good[: len(good) // 2],
              "garbled": good[:4] + bytes(40) + good[44:]}  # a header no reader parses  # fmt: skip
    memory = np.full((3, 24, 32, 3), 7, np.uint8)
    with pytest.raises(CorruptInputError, match=message):
        decode_frames_into([good, good, frames[bad]], memory.transpose(0, 3, 1, 2), [0, 1, 2],
                           (3, 24, 32), np.dtype("uint8"), _names)  # fmt: skip
    if bad != "cut":  # refused by its header: that row is never written
        assert (memory[2] == 7).all()
