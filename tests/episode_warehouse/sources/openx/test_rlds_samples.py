"""The RLDS reader on files the TensorFlow Datasets authors wrote (../shared/samples/rlds/), read
in place or copied into a temporary folder beside a features.json written from the published
feature list of their builder (``tensorflow_datasets/robotics/mt_opt/mt_opt.py``)."""

from __future__ import annotations

import io
import json
import zlib

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.raw import mirror_openx
from episode_warehouse.sources.openx.rlds.features import parse_features
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.ted.open import open_ted_folder
from episode_warehouse.tfrecord.example import parse_example
from episode_warehouse.tfrecord.records import iter_records
from warehouse_fixtures import mt_opt as mt_opt_fixture
from warehouse_fixtures import rlds_writer as w

MT_OPT_RLDS = mt_opt_fixture.MT_OPT_RLDS  # the builder's "rlds" config
# the "sd" config: success-detector images, no steps
MT_OPT_SD = w.features_dict(
    {
        "image_0": w.image((512, 640, 3)),
        "image_1": w.image((480, 640, 3)),
        "image_2": w.image((480, 640, 3)),
        "success": w.tensor((), "bool"),
        "task_code": w.tensor((), "string"),
    }
)


def _raw_records(path):
    with open(path, "rb") as fh:
        return [parse_example(data).features.feature for _, data in iter_records(fh, str(path))]


def _pil(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).transpose(2, 0, 1)


def test_bridge_as_published(shared_samples, tmp_path):
    src = shared_samples / "rlds"
    layout = WarehouseLayout.local(tmp_path / "wh")
    raw = mirror_openx(
        str(src), "bridge", layout.raw_dir("openx", "bridge"), root=layout.root, code_version="t"
    )
    assert raw.meta.dataset_version == "1.0.0"  # the folder's; its info says 0.0.1
    decode_openx(layout, "bridge", code_version="t")
    build_ted_stage(layout, "openx", "bridge", code_version="t")
    td = open_ted_folder(layout.ted_dir("openx", "bridge"))
    (feature,) = _raw_records(src / "bridge/1.0.0/bridge-train.tfrecord-00000-of-00001")
    assert td.batch_size[0] == 3  # 1 episode of 3 steps
    images = [_pil(b) for b in feature["steps/observation/image"].bytes_list.value]
    assert images[0].shape == (3, 480, 640)
    np.testing.assert_array_equal(td["observation", "image"].numpy(), np.stack(images))
    world = np.array(feature["steps/action/world_vector"].float_list.value, np.float32)
    np.testing.assert_array_equal(td["action", "world_vector"].numpy(), world.reshape(3, 3))
    assert td["observation", "natural_language_embedding"].shape == (3, 512)
    assert td["action", "open_gripper"].dtype.is_floating_point is False
    assert td["next", "done"].squeeze(-1).tolist() == [False, False, True]
    assert td["next", "terminated"].squeeze(-1).tolist() == [False, False, True]  # is_terminal
    (row,) = pq.read_table(layout.ted_dir("openx", "bridge") / "episodes.parquet").to_pylist()
    assert row["split"] == "train" and row["terminated"] and not row["truncated"]
    assert row["language_instruction"] == ""  # the dummy data's instruction is empty
    assert json.loads(row["episode_metadata"]) == {"episode_id": ""}


@pytest.fixture
def mt_opt(shared_samples, tmp_path):
    """mt_opt_rlds/1.0.0 with the builder's features.json and the info TFDS would write
    (``warehouse fixtures FOLDER --kind mt_opt`` writes the same)."""
    folder = mt_opt_fixture.write_mt_opt_folder(shared_samples, tmp_path / "src")
    return folder.parent.parent, folder / mt_opt_fixture.SHARD


def test_mt_opt_rlds_jpeg_and_zlib_tensors(mt_opt, tmp_path):
    src, shard = mt_opt
    layout = WarehouseLayout.local(tmp_path / "wh")
    mirror_openx(
        str(src),
        "mt_opt_rlds",
        layout.raw_dir("openx", "mt_opt_rlds"),
        root=layout.root,
        code_version="t",
    )
    decode_openx(layout, "mt_opt_rlds", code_version="t")
    folder = layout.decoded_dir("openx", "mt_opt_rlds")
    dec = open_decoded(folder)
    rows = pq.read_table(folder / "episodes.parquet").to_pylist()
    assert [r["length"] for r in rows] == [13, 20]  # two real episodes
    records = _raw_records(shard)
    # JPEG pixels: libjpeg's accurate IDCT (PIL here), equal to TensorFlow's INTEGER_ACCURATE
    images = dec.array("observation/image")
    for i, (row, feature) in enumerate(zip(rows, records, strict=True)):
        blobs = feature["steps/observation/image"].bytes_list.value
        start = row["start"]
        for t in (0, len(blobs) - 1):
            np.testing.assert_array_equal(images[start + t], _pil(blobs[t]))
        poses = np.stack(
            [
                np.frombuffer(zlib.decompress(b), "<f4")
                for b in feature["steps/action/target_pose"].bytes_list.value
            ]
        )
        np.testing.assert_array_equal(
            dec.array("action/target_pose")[start : start + row["length"]], poses
        )
        meta = json.loads(row["episode_metadata"])
        assert meta["task_code"] == "lift-any" and meta["skill"] == 1, i
        assert meta["episode_id"] == feature["episode_id"].bytes_list.value[0].decode()
    assert images.shape[1:] == (3, 512, 640)
    assert dec.array("observation/state_dense").shape[1:] == (7,)
    assert rows[0]["return"] is None  # mt_opt records no reward


def test_mt_opt_sd_is_refused_as_not_an_episode_dataset(shared_samples):
    with pytest.raises(CorruptInputError, match="not an RLDS episode dataset"):
        parse_features(MT_OPT_SD, "mt_opt_sd/1.0.0/features.json")
    # the record layer alone reads its real shards: one Example per image triple
    for split, sizes in (("test", 2), ("train", None)):
        path = shared_samples / f"rlds/mt_opt_sd/1.0.0/mt_opt_sd-{split}.tfrecord-00000-of-00001"
        records = _raw_records(path)
        assert sizes is None or len(records) == sizes
        for feature in records:
            shapes = [_pil(feature[f"image_{i}"].bytes_list.value[0]).shape for i in range(3)]
            assert shapes == [(3, 512, 640), (3, 480, 640), (3, 480, 640)]
            assert feature["success"].int64_list.value[0] in (0, 1)


def test_the_fixtures_command_writes_mt_opt_as_a_published_folder(shared_samples, tmp_path):
    """``warehouse fixtures FOLDER --kind mt_opt`` (the docs' first-hour command): the folder
    builds as published RLDS, the two real episodes of 13 and 20 steps."""
    from tests.helpers import build_openx_stages
    from warehouse_cli.main import main

    assert main(["fixtures", str(tmp_path / "src"), "--kind", "mt_opt",
                 "--samples", str(shared_samples)]) == 0  # fmt: skip
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx_stages(layout, tmp_path / "src", "mt_opt_rlds")
    episodes = pq.read_table(layout.ted_dir("openx", "mt_opt_rlds") / "episodes.parquet")
    assert episodes.column("length").to_pylist() == [13, 20]


def test_the_mt_opt_fixture_without_the_samples_says_where_they_are(tmp_path, capsys):
    """Outside a clone beside shared/ (#69): it was an 'unexpected FileNotFoundError'."""
    from warehouse_cli.main import main

    code = main(["fixtures", str(tmp_path / "src"), "--kind", "mt_opt",
                 "--samples", str(tmp_path / "nowhere")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "no mt_opt sample here" in err[0] and "--samples" in err[0]
