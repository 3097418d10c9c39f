"""OpenX shards -> decoded -> TED equals TorchRL's own OpenX formatting, key by key."""

from __future__ import annotations

import copy
import io
import os
import pickle
import tarfile

import numpy as np
import pytest
import torch
from PIL import Image

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import CorruptInputError, ForbiddenPickleError, SourceUnavailableError
from episode_warehouse.sources.openx.decode import decode_shards
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.ted import build_ted, open_ted_folder
from warehouse_fixtures.openx_writer import (
    DatasetSpec,
    add_member,
    make_episode,
    write_dataset,
)


def _build(tmp_path, root, name):
    dec, ted = tmp_path / "dec", tmp_path / "ted"
    dec.mkdir()
    ted.mkdir()
    decode_shards(list_shards(str(root), name).shards, dec)
    build_ted(open_decoded(dec), ted)
    return open_decoded(dec), open_ted_folder(ted)


def test_ted_equals_torchrl_openx_formatting(tmp_path):
    from torchrl.data.datasets.openx import _format_data, _make_tensordict_image_conv

    episodes = write_dataset(tmp_path / "mirror", DatasetSpec("cmu_stretch"), [[6, 9], [4, 1]])
    decoded, td = _build(tmp_path, tmp_path / "mirror", "cmu_stretch")
    start = 0
    tasks = decoded.meta.tasks
    for i, ep in enumerate(episodes):
        ref = torch.stack([_make_tensordict_image_conv(copy.deepcopy(s)) for s in ep["steps"]])
        _format_data(ref, i)
        ours = td[start : start + len(ref)]
        ref_keys = {k for k in ref.keys(True, True) if k != "language_instruction"}
        assert ref_keys == set(ours.keys(True, True)) - {"task_index"}
        for key in ref_keys:
            assert ours.get(key).dtype == ref.get(key).dtype, key
            torch.testing.assert_close(
                ours.get(key)[:], ref.get(key), rtol=0, atol=0, msg=lambda m, key=key: f"{key}: {m}"
            )
        instructions = {tasks[t] for t in ours["task_index"].tolist()}
        assert instructions == {ep["steps"][0]["language_instruction"]}
        start += len(ref)
    assert td.batch_size[0] == start


def test_jpeg_and_several_cameras_decode_like_pil(tmp_path):
    spec = DatasetSpec("bridge", cameras=("image", "wrist_image"), image_format="JPEG")
    episodes = write_dataset(tmp_path / "mirror", spec, [[3, 2]])
    _, td = _build(tmp_path, tmp_path / "mirror", "bridge")
    step = episodes[1]["steps"][1]
    for cam in spec.cameras:
        expected = np.asarray(Image.open(io.BytesIO(step["observation"][cam]["bytes"])))
        assert td["observation", cam][4].permute(1, 2, 0).numpy().tolist() == expected.tolist()


def _write_members(path, members):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for name, payload in members:
            add_member(tar, name, payload)


def _episode_bytes(rng, length=3):
    return pickle.dumps(make_episode(rng, DatasetSpec("x"), length))


def test_truncated_tar_names_the_shard(tmp_path):
    write_dataset(tmp_path / "m", DatasetSpec("kuka"), [[4, 4, 4]])
    shard = tmp_path / "m" / "kuka" / "kuka_00000.tar"
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptInputError, match="kuka_00000.tar"):
        _build(tmp_path, tmp_path / "m", "kuka")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_forbidden_global_is_refused_with_shard_and_member(tmp_path):
    rng = np.random.default_rng(0)
    evil = pickle.dumps({"steps": [_Evil()]})
    _write_members(
        tmp_path / "m" / "toto" / "toto_00000.tar",
        [("ep0.data.pickle", _episode_bytes(rng)), ("ep1.data.pickle", evil)],
    )
    with pytest.raises(ForbiddenPickleError, match=r"toto_00000.tar:ep1.data.pickle.*system"):
        _build(tmp_path, tmp_path / "m", "toto")


def test_inconsistent_step_shapes_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    episode = make_episode(rng, DatasetSpec("x"), 3)
    episode["steps"][2]["action"] = np.zeros(5)
    _write_members(
        tmp_path / "m" / "viola" / "viola_00000.tar", [("ep0.data.pickle", pickle.dumps(episode))]
    )
    with pytest.raises(CorruptInputError, match=r"ep0.data.pickle.*step 2: action"):
        _build(tmp_path, tmp_path / "m", "viola")


def test_image_that_does_not_decode_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    episode = make_episode(rng, DatasetSpec("x"), 2)
    episode["steps"][1]["observation"]["image"]["bytes"] = b"\x89PNG not really"
    _write_members(
        tmp_path / "m" / "kuka" / "kuka_00000.tar", [("ep0.data.pickle", pickle.dumps(episode))]
    )
    with pytest.raises(CorruptInputError, match=r"ep0.data.pickle step 1 observation/image"):
        _build(tmp_path, tmp_path / "m", "kuka")


def test_member_path_escaping_the_archive_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    _write_members(
        tmp_path / "m" / "kuka" / "kuka_00000.tar",
        [("../../etc/ep0.data.pickle", _episode_bytes(rng))],
    )
    with pytest.raises(CorruptInputError, match="climbs out"):
        _build(tmp_path, tmp_path / "m", "kuka")


def test_empty_dataset_and_missing_dataset(tmp_path):
    _write_members(tmp_path / "m" / "kuka" / "kuka_00000.tar", [])
    with pytest.raises(CorruptInputError, match="no episodes"):
        _build(tmp_path, tmp_path / "m", "kuka")
    with pytest.raises(SourceUnavailableError, match="no tar shards"):
        list_shards(str(tmp_path / "m"), "bridge")


def test_an_unchanged_shard_is_copied_from_the_previous_build_not_decoded(tmp_path):
    write_dataset(tmp_path / "mirror", DatasetSpec("cmu_stretch"), [[6, 9], [4, 1]])
    first = tmp_path / "first"
    first.mkdir()
    decode_shards(list_shards(str(tmp_path / "mirror"), "cmu_stretch").shards, first, salt="v1")
    # the second shard replaced by one of other episodes; the first left as it was
    write_dataset(tmp_path / "other", DatasetSpec("cmu_stretch"), [[6, 9], [3, 5, 2]], seed=9)
    shards = list_shards(str(tmp_path / "mirror"), "cmu_stretch").shards
    changed = shards[1].name
    os.replace(
        tmp_path / "other" / "cmu_stretch" / changed, tmp_path / "mirror" / "cmu_stretch" / changed
    )
    shards = list_shards(str(tmp_path / "mirror"), "cmu_stretch").shards
    again, fresh, other_code = (tmp_path / n for n in ("again", "fresh", "other_code"))
    for folder in (again, fresh, other_code):
        folder.mkdir()
    previous = open_decoded(first)
    meta = decode_shards(shards, again, previous=previous, salt="v1")
    assert meta.extra["reused_shards"] == 1
    assert (
        decode_shards(shards, other_code, previous=previous, salt="v2").extra["reused_shards"] == 0
    )
    decode_shards(shards, fresh, salt="v1")
    a, b = open_decoded(again), open_decoded(fresh)
    assert a.meta.extra["shards"] == b.meta.extra["shards"] and a.meta.tasks == b.meta.tasks
    assert a.episodes().equals(b.episodes())
    for key in a.arrays:
        np.testing.assert_array_equal(a.array(key), b.array(key), err_msg=key)
    assert [e["length"] for e in a.episodes().to_pylist()] == [6, 9, 3, 5, 2]
