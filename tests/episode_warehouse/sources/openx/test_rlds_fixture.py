"""The RLDS reader on a dataset written from the format (every leaf kind TFDS writes), against
the values written; and the refusals, each naming what it refused."""

from __future__ import annotations

import io
import json
import shutil
import zlib

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    LimitExceededError,
    SourceMissingError,
)
from episode_warehouse.image_header import PNG_SIGNATURE
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.openx.raw import detect_layout, mirror_openx
from episode_warehouse.sources.openx.rlds.listing import parse_version_pins
from episode_warehouse.sources.openx.stage import decode_openx
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.ted.open import open_ted_folder
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.rlds_robot import TASKS, write_robot_dataset


def _build(src, tmp_path, dataset="toy_robot", **kw):
    layout = WarehouseLayout.local(tmp_path / "wh")
    raw = mirror_openx(
        str(src),
        dataset,
        layout.raw_dir("openx", dataset),
        root=layout.root,
        code_version="t",
        **kw,
    )
    decoded = decode_openx(layout, dataset, code_version="t")
    return layout, raw, decoded


def _jpeg_grey(pixels: np.ndarray) -> np.ndarray:
    """What libjpeg's accurate IDCT gives for the JPEG the writer made (PIL, independently)."""
    return np.asarray(Image.open(io.BytesIO(w.encode_image(pixels, "jpeg"))))


@pytest.fixture
def robot(tmp_path):
    src = tmp_path / "src"
    folder, episodes = write_robot_dataset(src)
    return src, folder, episodes


def _flat(episodes):
    """Episodes in the order the reader takes them: split by name, then shard order."""
    return [e for split in sorted(episodes) for shard in episodes[split] for e in shard]


def test_every_leaf_kind_decodes_to_the_values_written(robot, tmp_path):
    src, _, episodes = robot
    layout, raw, decoded = _build(src, tmp_path)
    assert raw.meta.layout == "rlds" and raw.meta.dataset_version == "1.0.0"
    flat = _flat(episodes)
    folder = layout.decoded_dir("openx", "toy_robot")
    dec = open_decoded(folder)
    arrays = {k: dec.array(k)[: dec.rows] for k in dec.arrays}
    rows = pq.read_table(folder / "episodes.parquet").to_pylist()
    assert [r["length"] for r in rows] == [len(e["steps"]) for e in flat]
    assert [r["split"] for r in rows] == ["train", "train", "train", "val"]
    steps = [s for e in flat for s in e["steps"]]

    def column(get):
        return np.stack([np.asarray(get(s)) for s in steps])

    obs = lambda k: column(lambda s: s["observation"][k])  # noqa: E731
    np.testing.assert_array_equal(arrays["observation/image"], obs("image").transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(arrays["observation/depth"], obs("depth").transpose(0, 3, 1, 2))
    assert arrays["observation/depth"].dtype == np.uint16
    wrist = np.stack([_jpeg_grey(s["observation"]["wrist_image"]) for s in steps])[:, None]
    np.testing.assert_array_equal(arrays["observation/wrist_image"], wrist)
    # float64 and float16 are stored as float32 by TFDS: the float32 rounding, then the dtype
    state = obs("state").astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(arrays["observation/state"], state)
    assert arrays["observation/state"].dtype == np.float64
    np.testing.assert_array_equal(arrays["observation/joint_pos_f16"], obs("joint_pos_f16"))
    assert arrays["observation/joint_pos_f16"].dtype == np.float16
    np.testing.assert_array_equal(arrays["observation/contact"], obs("contact"))
    np.testing.assert_array_equal(arrays["observation/proprio_zlib"], obs("proprio_zlib"))
    np.testing.assert_array_equal(arrays["observation/points"], obs("points"))
    act = lambda k: column(lambda s: s["action"][k])  # noqa: E731
    for key in ("world_vector", "gripper", "raw_bytes"):
        np.testing.assert_array_equal(arrays[f"action/{key}"], act(key))
        assert arrays[f"action/{key}"].dtype == act(key).dtype
    np.testing.assert_array_equal(arrays["action/mode"], act("mode").astype(np.int64))
    for key, dtype in [("i8", np.int8), ("i32", np.int32), ("u16", np.uint16), ("u32", np.uint32),
                       ("u64", np.uint64)]:  # fmt: skip
        got = arrays[f"counters/{key}"]
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, column(lambda s, k=key: s["counters"][k]))
    np.testing.assert_array_equal(arrays["reward"], column(lambda s: s["reward"]))
    np.testing.assert_array_equal(arrays["is_terminal"], column(lambda s: s["is_terminal"]))
    assert "is_first" not in arrays and "is_last" not in arrays  # the boundaries themselves

    meta = json.loads((folder / "meta.json").read_text())
    texts = [meta["tasks"][i] for i in arrays["task_index"]]
    assert texts == [s["language_instruction"] for s in steps]
    assert set(meta["tasks"]) == set(TASKS)
    other = meta["texts"]["language_instruction_2"]
    assert [other[i] for i in arrays["language_instruction_2"]] == [
        s["language_instruction_2"] for s in steps
    ]
    assert [r["language_instruction"] for r in rows] == [
        e["steps"][0]["language_instruction"] for e in flat
    ]
    for row, e in zip(rows, flat, strict=True):
        assert json.loads(row["episode_metadata"]) == {
            "episode_id": e["episode_id"],
            "episode_metadata/file_path": e["episode_metadata"]["file_path"],
            "episode_metadata/success_steps": e["episode_metadata"]["success_steps"].tolist(),
        }
        assert row["terminated"] == bool(e["steps"][-1]["is_terminal"])
        assert row["return"] == pytest.approx(sum(float(s["reward"]) for s in e["steps"]))
        assert row["dataset_version"] == "1.0.0"


def test_ted_follows_torchrl_openx_mapping(robot, tmp_path):
    src, _, episodes = robot
    layout, _, _ = _build(src, tmp_path)
    build_ted_stage(layout, "openx", "toy_robot", code_version="t")
    td = open_ted_folder(layout.ted_dir("openx", "toy_robot"))
    flat = _flat(episodes)
    lengths = [len(e["steps"]) for e in flat]
    ends = np.cumsum(lengths) - 1
    done = td["next", "done"].squeeze(-1).numpy()
    assert np.flatnonzero(done).tolist() == ends.tolist()  # done = is_last
    term = [bool(e["steps"][-1]["is_terminal"]) for e in flat]
    assert td["next", "terminated"].squeeze(-1).numpy()[ends].tolist() == term
    assert td["next", "truncated"].squeeze(-1).numpy()[ends].tolist() == [not t for t in term]
    rewards = np.array([s["reward"] for e in flat for s in e["steps"]], np.float32)
    np.testing.assert_array_equal(td["next", "reward"].squeeze(-1).numpy(), rewards)
    world = np.stack([s["action"]["world_vector"] for e in flat for s in e["steps"]])
    np.testing.assert_array_equal(td["action", "world_vector"].numpy(), world)
    # ("next", obs) is the following step's observation within an episode, zero after its end
    state = td["observation", "state"].numpy()
    nxt = td["next", "observation", "state"].numpy()
    for start, n in zip(np.cumsum([0, *lengths[:-1]]), lengths, strict=True):
        np.testing.assert_array_equal(nxt[start : start + n - 1], state[start + 1 : start + n])
        assert not nxt[start + n - 1].any()


def test_gzip_shards_are_sniffed(tmp_path):
    src = tmp_path / "src"
    _, episodes = write_robot_dataset(src, gzipped=True)
    _, _, decoded = _build(src, tmp_path)
    assert decoded.meta.episodes == len(_flat(episodes))


def test_newest_version_is_read_unless_pinned(tmp_path):
    src = tmp_path / "src"
    for version, shards in [("0.9.0", [[(0, 3, True)]]), ("0.10.0", [[(1, 4, True)]])]:
        write_robot_dataset(src, version=version, shards={"train": shards})
    _, raw, decoded = _build(src, tmp_path / "a")
    assert raw.meta.dataset_version == "0.10.0"  # numerically newest, not by text
    assert decoded.meta.rows == 4
    _, raw, decoded = _build(src, tmp_path / "b", versions={"toy_robot": "0.9.0"})
    assert raw.meta.dataset_version == "0.9.0" and decoded.meta.rows == 3
    with pytest.raises(SourceMissingError, match="version 2.0.0 of toy_robot is not there"):
        _build(src, tmp_path / "c", versions={"toy_robot": "2.0.0"})
    assert parse_version_pins("bridge=0.1.0, toy_robot=0.9.0") == {
        "bridge": "0.1.0",
        "toy_robot": "0.9.0",
    }
    with pytest.raises(ConfigError, match="OPENX_VERSIONS"):
        parse_version_pins("bridge=latest")


def test_missing_and_unlisted_shards_are_refused(robot, tmp_path):
    src, folder, _ = robot
    shard = folder / "toy_robot-train.tfrecord-00001-of-00002"
    data = shard.read_bytes()
    shard.unlink()
    with pytest.raises(CorruptInputError, match="shards dataset_info.json names are missing"):
        _build(src, tmp_path / "a")
    shard.write_bytes(data)
    (folder / "toy_robot-train.tfrecord-00002-of-00003").write_bytes(data)
    with pytest.raises(CorruptInputError, match="not named by dataset_info.json"):
        _build(src, tmp_path / "b")


def test_a_shard_with_another_episode_count_is_refused(robot, tmp_path):
    src, folder, _ = robot
    info = json.loads((folder / "dataset_info.json").read_text())
    info["splits"][1]["shardLengths"] = ["2"]  # val really holds 1
    (folder / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(CorruptInputError, match="holds 1 episodes, dataset_info.json says 2"):
        _build(src, tmp_path)


def _one_leaf_dataset(tmp_path, leaf: dict, value, name="bad_leaf"):
    features = w.episode_features({"x": leaf, "is_last": w.tensor((), "bool")})
    steps = [{"x": value, "is_last": True}]
    w.write_dataset(tmp_path / "src", name, "1.0.0", features, {"train": [[{"steps": steps}]]})
    return tmp_path / "src"


@pytest.mark.parametrize(
    ("leaf", "value", "match"),
    [
        (w.tensor((), "uint8"), 300, r"declared uint8 and holds 300\.\.300"),
        (w.tensor((), "int8"), -200, "declared int8"),
        (w.tensor((3,), "float32"), np.zeros(3), None),  # the control: this one is read
    ],
)
def test_values_that_do_not_fit_their_dtype_are_refused(tmp_path, leaf, value, match):
    src = tmp_path / "src"
    # the writer keeps integers as they are (int64 on the wire): a hostile shard can hold more
    features = w.episode_features({"x": leaf, "is_last": w.tensor((), "bool")})
    raw = {"steps/x": w.int64_feature([value]) if match else w.float_feature(value),
           "steps/is_last": w.int64_feature([1])}  # fmt: skip
    folder = src / "bad_leaf" / "1.0.0"
    folder.mkdir(parents=True)
    (folder / "features.json").write_text(json.dumps(features))
    (folder / "bad_leaf-train.tfrecord-00000-of-00001").write_bytes(w.frame_record(w.example(raw)))
    info = {"name": "bad_leaf", "splits": [{"name": "train", "shardLengths": ["1"]}]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    if match is None:
        assert _build(src, tmp_path, "bad_leaf")[2].meta.rows == 1
    else:
        with pytest.raises(CorruptInputError, match=match):
            _build(src, tmp_path, "bad_leaf")


def test_a_zlib_tensor_may_not_inflate_past_its_shape(tmp_path):
    src = tmp_path / "src"
    features = w.episode_features({"x": w.tensor((4,), "float32", "zlib")})
    bomb = zlib.compress(bytes(64 << 20))  # 64 MB of zeros in ~64 KB, declared 16 bytes
    folder = src / "bomb" / "1.0.0"
    folder.mkdir(parents=True)
    (folder / "features.json").write_text(json.dumps(features))
    record = w.example({"steps/x": w.bytes_feature([bomb])})
    (folder / "bomb-train.tfrecord-00000-of-00001").write_bytes(w.frame_record(record))
    info = {"name": "bomb", "splits": [{"name": "train", "shardLengths": ["1"]}]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(LimitExceededError, match=r"steps/x inflates past the 16 bytes"):
        _build(src, tmp_path, "bomb")


@pytest.mark.parametrize(
    ("leaf", "match"),
    [
        ({"pythonClassName": "tensorflow_datasets.core.features.video_feature.Video"}, "videos"),
        (w.tensor((), "complex64"), "dtype 'complex64'"),
        (w.tensor((), "float32", "gzip"), "encoding 'gzip'"),
        (w.tensor((None,), "float32"), "unknown dimensions TFDS cannot read"),
        (w.dataset({"y": w.tensor()}), "only the episode's steps may be a sequence"),
    ],
)
def test_leaf_kinds_that_are_not_read_are_refused_by_name(tmp_path, leaf, match):
    features = w.episode_features({"x": leaf})
    folder = tmp_path / "src" / "odd" / "1.0.0"
    folder.mkdir(parents=True)
    (folder / "features.json").write_text(json.dumps(features))
    info = {"name": "odd", "splits": [{"name": "train", "shardLengths": []}]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(CorruptInputError, match=match) as caught:
        _build(tmp_path / "src", tmp_path, "odd")
    assert "x" in str(caught.value)


def test_ragged_steps_within_an_episode_are_refused(tmp_path):
    features = w.episode_features({"p": w.tensor((None, None), "float32", "zlib")})
    steps = [{"p": np.zeros((2, 3), np.float32)}, {"p": np.zeros((3, 3), np.float32)}]
    w.write_dataset(tmp_path / "src", "ragged", "1.0.0", features, {"train": [[{"steps": steps}]]})
    with pytest.raises(CorruptInputError, match="changes shape between steps"):
        _build(tmp_path / "src", tmp_path, "ragged")


def test_layout_is_detected_from_the_listing(robot, tmp_path):
    src, _, _ = robot
    assert detect_layout(str(src), "toy_robot") == "rlds"
    (src / "tarred").mkdir()
    (src / "tarred" / "tarred_00000.tar").write_bytes(b"")
    assert detect_layout(str(src), "tarred") == "webdataset"
    (src / "toy_robot" / "toy_robot_00000.tar").write_bytes(b"")
    with pytest.raises(ConfigError, match="set OPENX_FORMAT to rlds or webdataset"):
        detect_layout(str(src), "toy_robot")
    assert detect_layout(str(src), "toy_robot", "rlds") == "rlds"
    assert detect_layout("hf://datasets/o/r", "bridge") == "webdataset"
    with pytest.raises(ConfigError, match="not from the hub"):
        detect_layout("hf://datasets/o/r", "bridge", "rlds")
    with pytest.raises(SourceMissingError, match="in either layout"):
        detect_layout(str(src), "absent")


def _decoded_content(layout, dataset="toy_robot"):
    """A decoded folder's arrays (task and text indices as their strings), episodes, tasks."""
    dec = open_decoded(layout.decoded_dir("openx", dataset))
    arrays = {k: np.asarray(dec.array(k)) for k in dec.arrays}
    episodes = dec.episodes().to_pylist()
    return dec.meta.to_json(), arrays, episodes


def test_a_changed_shard_is_the_only_one_decoded_again_and_the_result_equals_a_fresh_build(
    tmp_path,
):
    shards = {
        "train": [[(0, 5, True), (1, 4, False)], [(2, 6, True)], [(4, 3, False)]],
        "val": [[(3, 3, True)]],
    }
    src = tmp_path / "src"
    write_robot_dataset(src, shards=shards)
    layout, _, first = _build(src, tmp_path)
    assert first.meta.extra["reused_shards"] == 0 and len(first.meta.extra["shards"]) == 4
    # shard 0 of train rewritten: its first episode now uses the other task and text first, so
    # the previous build's numbering of both is not a fresh build's and must be redone
    changed = dict(shards, train=[[(1, 4, False), (7, 8, True)], [(2, 6, True)], [(4, 3, False)]])
    staged, _ = write_robot_dataset(tmp_path / "staged", shards=changed)
    for name in ("toy_robot-train.tfrecord-00000-of-00003", "dataset_info.json"):
        shutil.copyfile(staged / name, src / "toy_robot" / "1.0.0" / name)  # only these change
    raw = mirror_openx(
        str(src),
        "toy_robot",
        layout.raw_dir("openx", "toy_robot"),
        root=layout.root,
        code_version="t",
    )
    second = decode_openx(layout, "toy_robot", code_version="t")
    assert raw.rebuilt and second.rebuilt
    assert second.meta.extra["reused_shards"] == 3  # the unchanged shards were copied, not decoded
    fresh_layout, _, fresh = _build(src, tmp_path / "fresh")
    assert fresh.meta.extra["reused_shards"] == 0
    meta, arrays, episodes = _decoded_content(layout)
    fmeta, farrays, fepisodes = _decoded_content(fresh_layout)
    assert arrays.keys() == farrays.keys()
    for key in arrays:  # byte for byte what a fresh build gives, task indices included
        np.testing.assert_array_equal(arrays[key], farrays[key], err_msg=key)
    assert episodes == fepisodes
    for key in ("tasks", "texts", "shards", "rows", "episodes", "arrays"):
        assert meta[key] == fmeta[key], key
    assert [e["length"] for e in episodes] == [4, 8, 6, 3, 3]
    # the camera's frames are the PNGs as published, the copied shards' bytes included
    ours, theirs = (
        open_decoded(lay.decoded_dir("openx", "toy_robot")) for lay in (layout, fresh_layout)
    )
    spec = ours.arrays["observation/image"]
    assert spec.encoding == "frames"
    stored = spec.path(ours.folder).read_bytes()
    assert stored == spec.path(theirs.folder).read_bytes()
    assert stored.count(PNG_SIGNATURE) == meta["rows"]
    assert meta["tasks"] == [TASKS[1], TASKS[0]] and meta["texts"] == {
        "language_instruction_2": ["variant 1", "variant 0"]
    }
