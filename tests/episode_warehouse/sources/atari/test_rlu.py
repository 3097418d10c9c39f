"""RL Unplugged Atari files -> TED, against the episodes the fixture writer encoded.

The writer (``fixtures/rlu_writer.py``) encodes TFRecord framing, masked crc32c and the Example
protobuf by hand from the format spec; the reader uses google-crc32c and protobuf. Ground truth
is the simulated episodes themselves.
"""

from __future__ import annotations

import gzip
import shutil
import struct
from dataclasses import replace

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import ConfigError, CorruptInputError, SourceMissingError
from episode_warehouse.incremental import published
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.mirror import detect_layout, mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.tfrecord.records import masked_crc32c
from warehouse_fixtures import rlu_writer as w
from warehouse_fixtures.demo import DEMO_BUCKET, rlu_episodes
from warehouse_fixtures.gcs_emulator import upload_tree

pytestmark = pytest.mark.integration  # decode worker processes and catalog queries

ATARI_KEYS = [
    "action", "done", "episode", "is_init", "observation", "terminated", "truncated",
    ("next", "done"), ("next", "observation"), ("next", "reward"), ("next", "terminated"),
    ("next", "truncated"),
]  # fmt: skip

LENGTHS = [[40, 1, 25], [2, 60, 33], [17]]  # rows (= transitions) per episode


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A local folder with ``Pong/run_3-0000i-of-00003`` and the episodes they hold."""
    root = tmp_path_factory.mktemp("rlu-src")
    files = rlu_episodes(LENGTHS, seed=7)
    # a record of one row that ended (its only transition ends the game) in the middle file
    files[1].insert(1, w.RluEpisode(1, 99, files[1][0].frames[:1], np.zeros(1, np.int64),
                                    np.ones(1, np.float32), np.zeros(1, np.float32)))  # fmt: skip
    w.write_run(root / "Pong", 3, files)
    return root, files


def _build(store, root, key="Pong/3", mode="download", endpoint=None):
    layout = WarehouseLayout.local(root)
    game, run = key.split("/")
    mirror_run(
        store,
        game,
        int(run),
        layout.raw_dir("atari", key),
        CheckpointSubset("all"),
        root=layout.root,
        code_version="t",
        mode=mode,
    )
    decode_atari(layout, key, code_version="t", workers=2, endpoint=endpoint)
    build_ted_stage(layout, "atari", key, code_version="t")
    publish_catalog_rows(layout, "atari", key, code_version="t", run_id="r")
    return layout


def _expected(files):
    """The TED Dopamine's logger semantics ask for: every row of a record is a step (row i =
    observation i, action i, the reward after it); the next observation of the last step was
    never logged (zeros)."""
    eps = [e for f in files for e in f]
    cat = np.concatenate
    last = cat([np.arange(len(e.frames)) == len(e.frames) - 1 for e in eps])
    zero = np.zeros((1, 84, 84), np.uint8)
    terminal = cat([(np.arange(len(e.frames)) == len(e.frames) - 1) & e.ended for e in eps])
    return {
        "observation": cat([e.frames for e in eps]),
        ("next", "observation"): cat([cat([e.frames[1:], zero]) for e in eps]),
        "action": cat([e.actions for e in eps]).astype(np.int32),
        ("next", "reward"): cat([e.rewards for e in eps])[:, None],
        ("next", "done"): last[:, None],
        ("next", "terminated"): terminal[:, None],
        ("next", "truncated"): (last & ~terminal)[:, None],
        "episode": np.repeat(np.arange(len(eps)), [len(e.frames) for e in eps]),
    }, eps


def test_ted_keeps_every_logged_transition(source, tmp_path):
    src, files = source
    layout = _build(open_blob_store(str(src)), tmp_path / "wh")
    td = open_ted("atari", "Pong/3", root=layout.folder)
    want, eps = _expected(files)
    assert sorted(map(str, td.keys(True, True))) == sorted(map(str, ATARI_KEYS))  # one schema
    for key, value in want.items():
        assert np.array_equal(td[key][:].numpy(), value), key
    meta = published(layout.root, layout.decoded_dir("atari", "Pong/3"), DecodedRecord)
    assert meta.episodes == len(eps) and meta.rows == sum(len(e.frames) for e in eps)
    from episode_warehouse.catalog import run_query

    _, rows = run_query(
        layout.root,
        'SELECT checkpoint_idx, episode_idx, "return", recorded_return, length, terminated, '
        "source_files FROM episodes ORDER BY episode",
    )
    assert [(r[0], r[1]) for r in rows] == [(e.checkpoint_idx, e.episode_idx) for e in eps]
    for row, e in zip(rows, eps, strict=True):
        assert row[2] == pytest.approx(float(e.rewards.astype(np.float64).sum()))  # all N
        assert row[3] == row[2]  # the recorded episode_return is that sum (checked at decode)
        assert row[4] == len(e.frames) and row[5] == e.ended
        assert row[6] == [f"Pong/{w.file_name(3, e.checkpoint_idx, 3)}"]


def test_same_ted_from_the_emulator_and_streaming_without_a_raw_copy(
    source, tmp_path, gcs_endpoint
):
    src, _ = source
    upload_tree(gcs_endpoint, DEMO_BUCKET, src, prefix="rlu-test")
    built = _build(open_blob_store(str(src)), tmp_path / "a")
    local = open_ted("atari", "Pong/3", root=built.folder)
    gcs = open_blob_store(f"gs://{DEMO_BUCKET}/rlu-test", endpoint=gcs_endpoint)
    downloaded = _build(gcs, tmp_path / "b", endpoint=gcs_endpoint)
    streamed = _build(gcs, tmp_path / "c", mode="streaming", endpoint=gcs_endpoint)
    assert list((streamed.raw_dir("atari", "Pong/3")).iterdir()) == [
        streamed.raw_dir("atari", "Pong/3") / "meta.json"
    ]  # streaming keeps no copy of the files
    for layout in (downloaded, streamed):
        td = open_ted("atari", "Pong/3", root=layout.folder)
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
                   root=LocalRoot(tmp_path), code_version="t", mode="streaming")  # fmt: skip


def test_checkpoint_subsets_select_files(source, tmp_path):
    src, files = source
    layout = WarehouseLayout.local(tmp_path / "wh")
    built, _ = mirror_run(
        open_blob_store(str(src)),
        "Pong",
        3,
        layout.raw_dir("atari", "Pong/3"),
        CheckpointSubset("last:2"),
        root=layout.root,
        code_version="t",
    )
    assert built.meta.suffixes == [1, 2]
    assert sorted(built.meta.files) == [w.file_name(3, 1, 3), w.file_name(3, 2, 3)]
    decoded = decode_atari(layout, "Pong/3", code_version="t", workers=1)
    assert decoded.meta.episodes == len([e for f in files[1:] for e in f])


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
    layout = WarehouseLayout.local(tmp_path / "wh")
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
    assert "observations 60, actions 57" in text


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


# --- semantic refusals: rows that are not what Dopamine's logger wrote ------------------------


def _with(values, at, value):
    out = np.array(values, copy=True)
    out[at] = value
    return out


def _mid_discount_zero(ep):
    return replace(ep, discounts=_with(ep.discounts, 10, 0.0))


def _discount_half(ep):
    return replace(ep, discounts=_with(ep.discounts, -1, 0.5))


def _clipped_outside(ep):
    rewards = _with(ep.rewards, 4, 3.0)
    return replace(ep, rewards=rewards, clipped_rewards=rewards)


def _clip_differs(ep):
    return replace(ep, clipped_rewards=_with(ep.clipped, 4, 0.5))


def _other_checkpoint(ep):
    return replace(ep, checkpoint_idx=2)


def _negative_episode(ep):
    return replace(ep, episode_idx=-4)


def _wrong_return(ep):
    total = float(ep.rewards.sum())
    return replace(ep, returns=(total + 7.0, total))


SEMANTIC_REFUSALS = [
    (_mid_discount_zero, r"step 10 has discount 0 before the last step \(two episodes merged"),
    (_discount_half, r"step 59 discount 0.5 is not 0 or 1"),
    (_clipped_outside, r"step 4 clipped_rewards 3.0 is outside \[-1, 1\]"),
    (_clip_differs, r"step 4 clipped_rewards 0.5 is not the clip of unclipped_rewards"),
    (_other_checkpoint, r"checkpoint_idx 2 in the file of checkpoint 1"),
    (_negative_episode, r"a negative checkpoint_idx or episode_idx"),
    (_wrong_return, r"episode_return .* is not the sum of the episode's 60 rewards"),
]


@pytest.mark.parametrize(
    ("change", "message"), SEMANTIC_REFUSALS, ids=lambda v: getattr(v, "__name__", "")
)
def test_rows_that_the_logger_did_not_write_are_refused(source, tmp_path, change, message):
    src, _ = source
    copy = _rewrite_records(src, tmp_path, lambda ep: w.encode_episode(change(ep)))
    text = _refused(copy, tmp_path, message)
    assert "run_3-00001-of-00003 record at byte" in text
    if change is not _negative_episode:
        assert "(checkpoint " in text and ", episode " in text  # names the episode


def test_an_episode_repeated_within_its_checkpoint_is_refused(source, tmp_path):
    src, _ = source
    copy = tmp_path / "src"
    shutil.copytree(src, copy)
    episodes = rlu_episodes(LENGTHS, seed=7)[1]
    records = [w.encode_episode(e) for e in episodes]
    w.write_file(copy / "Pong" / w.file_name(3, 1, 3), [*records, records[0]])
    text = _refused(copy, tmp_path, "episode_idx 3 appears twice in checkpoint 1")
    assert "run_3-00001-of-00003 record at byte" in text


def test_the_time_limit_is_a_truncation_not_a_terminal_state(tmp_path):
    """27,000 rows whose last the logger marked terminal: Dopamine's time limit, truncated."""
    from episode_warehouse.sources.atari.time_limit import MAX_EPISODE_STEPS

    blank = w.png(np.full((84, 84), 87, np.uint8))  # one frame bytes, repeated: cheap to write
    n = MAX_EPISODE_STEPS
    ends = _with(np.ones(n, np.float32), -1, 0.0)
    long = w.RluEpisode(0, 0, np.zeros((n, 84, 84), np.uint8), np.zeros(n, np.int64),
                        np.zeros(n, np.float32), ends)  # fmt: skip
    short = replace(long, episode_idx=1, frames=long.frames[:-1], actions=long.actions[:-1],
                    rewards=long.rewards[:-1], discounts=long.discounts[1:])  # fmt: skip
    src = tmp_path / "src"
    w.write_file(
        src / "Pong" / w.file_name(3, 0, 1),
        [w.encode_episode(e, frames_png=[blank] * len(e.frames)) for e in (long, short)],
    )
    layout = _build(open_blob_store(str(src)), tmp_path / "wh")
    td = open_ted("atari", "Pong/3", root=layout.folder)
    last = [n - 1, 2 * n - 2]
    assert td["next", "done"][last, 0].tolist() == [True, True]
    assert td["next", "terminated"][last, 0].tolist() == [False, True]  # the limit; game over
    assert td["next", "truncated"][last, 0].tolist() == [True, False]
    from episode_warehouse.catalog import run_query

    _, rows = run_query(layout.root, "SELECT length, terminated, truncated, complete FROM episodes")
    assert sorted(rows) == [(n - 1, True, False, True), (n, False, True, True)]
    assert (
        published(layout.root, layout.decoded_dir("atari", "Pong/3")).extra["time_limited_episodes"]
        == 1
    )


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_recorded_return_is_refused(source, tmp_path, value):
    """+inf passed the return check before #42: its tolerance scaled with the value."""
    src, _ = source

    def change(ep):
        return w.encode_episode(replace(ep, returns=(value, float(ep.clipped.sum()))))

    text = _refused(_rewrite_records(src, tmp_path, change), tmp_path, "episode_return is")
    assert "not a finite number" in text and "run_3-00001-of-00003" in text
