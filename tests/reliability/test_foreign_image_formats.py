"""A camera holds what its encoding declares (#57 item 9): an animated GIF, a one-frame GIF or a
WebP in DROID's JPEG camera is refused when the partition is built, by its first bytes (never
decoded: an animated GIF decoded every frame, 293 KB -> 4.1 GB), naming the shard file, the
step and the camera; nothing of the decoded stage is published."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from tests.helpers import build_openx_stages
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.droid import write_droid

pytestmark = pytest.mark.integration


def _foreign(kind: str) -> bytes:
    rng = np.random.default_rng(0)
    frames = [Image.fromarray(rng.integers(0, 255, (180, 320, 3), np.uint8)) for _ in range(8)]
    out = io.BytesIO()
    if kind == "animated-gif":
        frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:])
    elif kind == "gif":
        frames[0].save(out, format="GIF")
    else:
        frames[0].save(out, format="WEBP")
    return out.getvalue()


@pytest.mark.parametrize("kind", ["animated-gif", "gif", "webp"])
def test_a_foreign_image_in_a_jpeg_camera_is_refused_at_build(kind, tmp_path, monkeypatch):
    planted, calls, real = _foreign(kind), itertools.count(), w.encode_image

    def encode(pixels, fmt):  # the 8th image the writer encodes: the first camera's step 7
        return planted if next(calls) == 7 else real(pixels, fmt)

    monkeypatch.setattr(w, "encode_image", encode)
    write_droid(tmp_path / "src", shards=1, per_shard=1)
    layout = WarehouseLayout.local(tmp_path / "wh")
    with pytest.raises(CorruptInputError, match="not the JPEG or PNG a camera holds") as err:
        build_openx_stages(layout, tmp_path / "src", "droid")
    message = str(err.value)
    assert ("a GIF" if "gif" in kind else "a WEBP") in message
    assert "droid-train.tfrecord-00000-of-00001" in message
    assert "step 7" in message and "exterior_image_1_left" in message
    assert not (layout.decoded_dir("openx", "droid") / "meta.json").exists()
