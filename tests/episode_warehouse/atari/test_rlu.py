"""RL Unplugged Atari files -> TED, against the episodes the fixture writer encoded.

The writer (``fixtures/rlu_writer.py``) encodes TFRecord framing, masked crc32c and the Example
protobuf by hand from the format spec; the reader uses google-crc32c and protobuf. Ground truth
is the simulated episodes themselves.
"""

from __future__ import annotations

import gzip
import shutil
import struct

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.atari.dopamine_files import CheckpointSubset
from episode_warehouse.atari.mirror import detect_layout, mirror_run
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import ConfigError, CorruptInputError, SourceMissingError
from episode_warehouse.fixtures import rlu_writer as w
from episode_warehouse.fixtures.demo import DEMO_BUCKET, rlu_episodes
from episode_warehouse.fixtures.gcs_emulator import upload_tree
from episode_warehouse.incremental import published
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.stages import build_ted_stage, decode_atari, publish_catalog_rows
from episode_warehouse.tfrecord.records import masked_crc32c

LENGTHS = [[40, 1, 25], [2, 60, 33], [17]]  # transitions per episode; 1: an N = 2 episode


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A local folder with ``Pong/run_3-0000i-of-00003`` and the episodes they hold."""
    root = tmp_path_factory.mktemp("rlu-src")
    files = rlu_episodes(LENGTHS, seed=7)
    # one record with a single observation (no transition) in the middle file
    files[1].insert(1, w.RluEpisode(1, 99, files[1][0].frames[:1], np.zeros(1, np.int64),
                                    np.zeros(1, np.float32), np.zeros(1, np.float32)))  # fmt: skip
    w.write_run(root / "Pong", 3, files)
    return root, files


def _build(store, root, key="Pong/3", mode="download", endpoint=None):
    layout = WarehouseLayout(root)
    game, run = key.split("/")
    mirror_run(
        store,
        game,
        int(run),
        layout.raw_dir("atari", key),
        CheckpointSubset("all"),
        code_version="t",
        mode=mode,
    )
    decode_atari(layout, key, code_version="t", workers=2, endpoint=endpoint)
    build_ted_stage(layout, "atari", key, code_version="t")
    publish_catalog_rows(layout, "atari", key, code_version="t", run_id="r")
    return layout


def _expected(files):
    """The TED the mapping asks for, from the encoded episodes (N = 1 records left out)."""
    eps = [e for f in files for e in f if len(e.frames) > 1]
    obs = np.concatenate([e.frames[:-1] for e in eps])
    nxt = np.concatenate([e.frames[1:] for e in eps])
    cat = np.concatenate
    done = cat([np.arange(len(e.frames) - 1) == len(e.frames) - 2 for e in eps])
    terminal = cat([(np.arange(len(e.frames) - 1) == len(e.frames) - 2) & e.terminal for e in eps])
    return {
        "observation": obs,
        ("next", "observation"): nxt,
        "action": cat([e.actions[:-1] for e in eps]).astype(np.int32),
        ("next", "reward"): cat([e.rewards[:-1] for e in eps])[:, None],
        ("next", "clipped_reward"): cat([e.clipped[:-1] for e in eps])[:, None],
        ("next", "done"): done[:, None],
        ("next", "terminated"): terminal[:, None],
        ("next", "truncated"): (done & ~terminal)[:, None],
        "episode": np.repeat(np.arange(len(eps)), [len(e.frames) - 1 for e in eps]),
    }, eps


def test_ted_follows_the_rlds_mapping(source, tmp_path):
    src, files = source
    layout = _build(open_blob_store(str(src)), tmp_path / "wh")
    td = open_ted("atari", "Pong/3", root=layout.root)
    want, eps = _expected(files)
    for key, value in want.items():
        assert np.array_equal(td[key][:].numpy(), value), key
    # the last step's next observation is the episode's final frame, not zeros
    last = np.flatnonzero(want[("next", "done")][:, 0])
    assert all(td["next", "observation"][int(i)].any() for i in last)
    meta = published(layout.decoded_dir("atari", "Pong/3"))
    assert meta["single_step_records"] == 1 and meta["episodes"] == len(eps)
    from episode_warehouse.catalog import run_query

    _, rows = run_query(
        layout.catalog_dir,
        'SELECT checkpoint_idx, episode_idx, "return", recorded_return, length, terminated, '
        "source_files FROM episodes ORDER BY episode",
    )
    assert [(r[0], r[1]) for r in rows] == [(e.checkpoint_idx, e.episode_idx) for e in eps]
    for row, e in zip(rows, eps, strict=True):
        assert row[2] == pytest.approx(float(e.rewards[:-1].astype(np.float64).sum()))
        assert row[3] == pytest.approx(row[2], abs=1e-4)  # the writer records the same sum
        assert row[4] == len(e.frames) - 1 and row[5] == e.terminal
        assert row[6] == [f"Pong/{w.file_name(3, e.checkpoint_idx, 3)}"]


def test_same_ted_from_the_emulator_and_streaming_without_a_raw_copy(
    source, tmp_path, gcs_endpoint
):
    src, _ = source
    upload_tree(gcs_endpoint, DEMO_BUCKET, src, prefix="rlu-test")
    local = open_ted("atari", "Pong/3", root=_build(open_blob_store(str(src)), tmp_path / "a").root)
    gcs = open_blob_store(f"gs://{DEMO_BUCKET}/rlu-test", endpoint=gcs_endpoint)
    downloaded = _build(gcs, tmp_path / "b", endpoint=gcs_endpoint)
    streamed = _build(gcs, tmp_path / "c", mode="streaming", endpoint=gcs_endpoint)
    assert list((streamed.raw_dir("atari", "Pong/3")).iterdir()) == [
        streamed.raw_dir("atari", "Pong/3") / "meta.json"
    ]  # streaming keeps no copy of the files
    for layout in (downloaded, streamed):
        td = open_ted("atari", "Pong/3", root=layout.root)
        for key in local.keys(True, True):
            assert np.array_equal(td[key][:].numpy(), local[key][:].numpy()), key


def test_the_layout_is_detected_and_can_be_forced(source, tmp_path, demo_fixtures):
    src, _ = source
    store = open_blob_store(str(src))
    assert detect_layout(store, "Pong", 3) == "rlu"
    dopamine = open_blob_store(str(demo_fixtures / "atari-bucket" / "dqn"))
    assert detect_layout(dopamine, "Pong", 5) == "dopamine"
    assert detect_layout(dopamine, "Asterix", 2) == "rlu"  # the demo holds both layouts
    with pytest.raises(
        SourceMissingError, match=r"either layout .* \(Dopamine\) or .*RL Unplugged"
    ):
        detect_layout(store, "Pong", 4)
    with pytest.raises(SourceMissingError, match="not one of the 46 RL Unplugged games"):
        detect_layout(store, "AirRaid", 1)
    both = tmp_path / "both"
    shutil.copytree(src, both)
    shutil.copytree(demo_fixtures / "atari-bucket" / "dqn" / "Pong" / "5", both / "Pong" / "3")
    with pytest.raises(ConfigError, match="both layouts hold Pong/3.*ATARI_FORMAT"):
        detect_layout(open_blob_store(str(both)), "Pong", 3)
    assert detect_layout(open_blob_store(str(both)), "Pong", 3, "rlu") == "rlu"
    with pytest.raises(ConfigError, match="streaming reads the RL Unplugged layout only"):
        mirror_run(dopamine, "Pong", 5, tmp_path / "x", CheckpointSubset("all"),
                   code_version="t", mode="streaming")  # fmt: skip


def test_checkpoint_subsets_select_files(source, tmp_path):
    src, files = source
    layout = WarehouseLayout(tmp_path / "wh")
    built, _ = mirror_run(
        open_blob_store(str(src)),
        "Pong",
        3,
        layout.raw_dir("atari", "Pong/3"),
        CheckpointSubset("last:2"),
        code_version="t",
    )
    assert built.meta["suffixes"] == [1, 2]
    assert sorted(built.meta["files"]) == [w.file_name(3, 1, 3), w.file_name(3, 2, 3)]
    decoded = decode_atari(layout, "Pong/3", code_version="t", workers=1)
    assert decoded.meta["episodes"] == len([e for f in files[1:] for e in f if len(e.frames) > 1])


# --- malformed files: each one a clear error naming the file and the record's offset --------


def _damage(src, tmp_path, damage):
    """A copy of the source whose middle file is rewritten by ``damage(raw_bytes) -> bytes``."""
    copy = tmp_path / "src"
    shutil.copytree(src, copy)
    path = copy / "Pong" / w.file_name(3, 1, 3)
    path.write_bytes(gzip.compress(damage(gzip.decompress(path.read_bytes())), mtime=0))
    return copy


def _second_record_offset(raw: bytes) -> int:
    (length,) = struct.unpack("<Q", raw[:8])
    return 12 + length + 4


def _refused(copy, tmp_path, match):
    with pytest.raises(CorruptInputError, match=match) as err:
        _build(open_blob_store(str(copy)), tmp_path / "wh")
    assert "Fix:" in str(err.value)
    layout = WarehouseLayout(tmp_path / "wh")
    assert not layout.decoded_dir("atari", "Pong/3").exists()
    assert not layout.ted_dir("atari", "Pong/3").exists()
    return str(err.value)


def test_a_corrupt_length_crc(source, tmp_path):
    src, _ = source

    def damage(raw):
        at = _second_record_offset(raw) + 8
        return raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1 :]

    text = _refused(_damage(src, tmp_path, damage), tmp_path, "length's crc32c does not match")
    assert "run_3-00001-of-00003" in text and "record at byte" in text


def test_a_corrupt_data_crc(source, tmp_path):
    src, _ = source

    def damage(raw):
        at = _second_record_offset(raw) + 12 + 100  # a byte inside the record's data
        return raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :]

    damaged = _damage(src, tmp_path, damage)
    raw = gzip.decompress((src / "Pong" / w.file_name(3, 1, 3)).read_bytes())
    text = _refused(damaged, tmp_path, "data's crc32c does not match")
    assert f"record at byte {_second_record_offset(raw)}" in text


def test_a_truncated_file(source, tmp_path):
    src, _ = source
    copy = tmp_path / "src"
    shutil.copytree(src, copy)
    path = copy / "Pong" / w.file_name(3, 1, 3)
    path.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])
    _refused(copy, tmp_path, "run_3-00001-of-00003: .*(truncated|corrupt)")


def _rewrite_records(src, tmp_path, change):
    """A copy whose middle file's second episode is re-encoded after ``change(episode)``."""
    copy = tmp_path / "src"
    shutil.copytree(src, copy)
    files = rlu_episodes(LENGTHS, seed=7)
    episodes = files[1]
    records = [w.encode_episode(e) for e in episodes]
    records[1] = change(episodes[1])
    w.write_file(copy / "Pong" / w.file_name(3, 1, 3), records)
    return copy


def test_mismatched_list_lengths(source, tmp_path):
    src, _ = source

    def change(ep):
        return w.encode_episode(
            w.RluEpisode(
                ep.checkpoint_idx,
                ep.episode_idx,
                ep.frames,
                ep.actions[:-3],
                ep.rewards,
                ep.discounts,
            )  # fmt: skip
        )

    text = _refused(_rewrite_records(src, tmp_path, change), tmp_path, "different lengths")
    assert "observations 61, actions 58" in text


def test_a_frame_that_is_not_84x84(source, tmp_path):
    src, _ = source

    def change(ep):
        pngs = [w.png(f) for f in ep.frames]
        pngs[5] = w.png(np.zeros((64, 64), dtype=np.uint8))
        return w.encode_episode(ep, frames_png=pngs)

    text = _refused(_rewrite_records(src, tmp_path, change), tmp_path, "step 5 frame declares")
    assert "(1, 64, 64)" in text and "run_3-00001-of-00003 record at byte" in text


def test_masked_crc32c_is_tensorflows():
    # TensorFlow's own test vector (tsl/lib/hash/crc32c_test.cc): crc32c("a") = 0xc1d04330,
    # and Mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8
    crc = 0xC1D04330
    assert masked_crc32c(b"a") == ((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)
    assert masked_crc32c(b"a") == w.masked_crc32c(b"a")
