"""Float32 depth images as TFDS writes and reads them (#48): berkeley_autolab_ur5's real
features.json declares ``image_with_depth`` a float32 ``(480, 640, 1)`` Image, which TFDS's
``_FloatImageEncoder`` bit-casts into a 4-channel 8-bit PNG. The dataset decodes, its depth
values come back bit for bit, it is declared a depth camera (the viewer draws it as depth, the
export keeps float32 values) and it standardizes."""

from __future__ import annotations

import io
import json

import numpy as np
import PIL.Image
import pytest

from episode_warehouse.decoded.format import CHW, DEPTH
from episode_warehouse.export.features import features_for
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import open_ted
from episode_warehouse.ted.cameras import camera_leaves, declared_images, image_layout
from episode_warehouse.ted.files import read_meta
from episode_warehouse.viewer.frames import frame_png
from tests.episode_warehouse.standardized.conftest import build_ted, features_json
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.oxe_from_features import write_from_features

UR5 = "berkeley_autolab_ur5"
KEY = "observation/image_with_depth"


def _depth(t, n):
    """Metres, a missing reading (NaN) in one corner, and values whose low bytes matter."""
    d = np.linspace(0.3, 2.7, 480 * 640, dtype=np.float32).reshape(480, 640, 1) + t / 1000
    d[0, 0, 0] = np.nan
    return d


@pytest.fixture
def ur5(shared_samples, tmp_path):
    src = tmp_path / "src"
    _, episodes = write_from_features(src, UR5, features_json(shared_samples, UR5), [3, 2],
                                      overrides={KEY: _depth})  # fmt: skip
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_ted(layout, src, UR5)
    return layout, episodes


def test_the_writer_bitcasts_as_tfds_does():
    """TFDS's float image: the float's little-endian bytes as an RGBA PNG's channels (read
    back with PIL, independently of the reader)."""
    depth = _depth(0, 1)
    png = PIL.Image.open(io.BytesIO(w.encode_image(depth, "png")))
    assert png.mode == "RGBA"
    back = np.asarray(png).view("<f4")
    np.testing.assert_array_equal(back, depth)


def test_float_depth_decodes_bit_for_bit_and_is_a_depth_camera(ur5):
    layout, episodes = ur5
    td = open_ted("openx", UR5, root=layout.folder)
    got = td["observation", "image_with_depth"]
    assert got.dtype.is_floating_point and tuple(got.shape) == (5, 1, 480, 640)
    want = np.stack([s["observation"]["image_with_depth"] for e in episodes for s in e["steps"]])
    np.testing.assert_array_equal(got.numpy(), want.transpose(0, 3, 1, 2))  # NaN == NaN here
    meta = read_meta(layout.ted_dir("openx", UR5))
    declared = declared_images(meta)
    assert declared == {KEY: DEPTH, "observation/hand_image": CHW, "observation/image": CHW}
    decoded = json.loads((layout.decoded_dir("openx", UR5) / "meta.json").read_text())
    assert decoded["nonfinite"] == {KEY: 5}  # a missing reading per frame: kept, counted
    # the viewer lists it as a depth camera and draws it grey, near dark, missing black
    cameras = camera_leaves(td[:2], declared)
    assert cameras[KEY] == (("observation", "image_with_depth"), DEPTH)
    grey = np.asarray(PIL.Image.open(io.BytesIO(frame_png(got[1].numpy(), DEPTH))))
    finite = want[1, ..., 0][1:, :].astype(np.float64)
    lo, hi = float(np.nanmin(want[1])), float(np.nanmax(want[1]))
    np.testing.assert_array_equal(grey[1:, :], np.rint(1 + (finite - lo) * 254 / (hi - lo)))
    assert grey[0, 0] == 0 and grey[0, 1] == 1  # missing; the nearest finite reading
    # the export keeps its values (float32, never squeezed into 8 bits), named as depth
    assert image_layout(("image_with_depth",), got, declared) == DEPTH
    feats = features_for(td, False, images=declared)
    depth_feature = feats["observation.image_with_depth"]
    assert depth_feature == {"dtype": "float32", "shape": (1, 480, 640),
                             "names": ["depth", "height", "width"]}  # fmt: skip
    assert feats["observation.images.image"]["dtype"] == "image"


def test_the_dataset_standardizes_with_its_depth(ur5):
    from episode_warehouse.standardized import open_standardized
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout, _ = ur5
    build_standardized_stage(layout, "openx", UR5, code_version="t")
    assert len(open_standardized("openx", UR5, root=layout.folder)) == 5
