"""Malformed Dopamine checkpoints: one clear error naming the file; nothing published."""

import gzip
import io
import shutil

import numpy as np
import pytest

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.incremental import build_if_changed
from episode_warehouse.sources.atari.decode import decode_run
from episode_warehouse.sources.atari.dopamine_files import file_name
from episode_warehouse.storage.local import LocalRoot
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run


@pytest.fixture
def run_dir(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "replay_logs"
    write_run(
        folder,
        [play_episode(rng, int(n)) for n in rng.integers(20, 60, 12)],
        150,
        final_log=False,
        compresslevel=1,
    )
    return folder


def _rewrite(path, array):
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        np.save(gz, array, allow_pickle=False)


def _load(path):
    with gzip.open(path) as fh:
        return np.load(io.BytesIO(fh.read()))


def _decode_published(run_dir, tmp_path):
    """Decode into <tmp>/published the way stages do (the incremental rule: stage, publish)."""
    target = tmp_path / "published"
    build_if_changed(
        LocalRoot(tmp_path),
        target,
        {"t": 1},
        lambda tmp: decode_run(run_dir, [0, 1], tmp, workers=2),
    )
    return target


def _assert_nothing_published(tmp_path):
    assert not (tmp_path / "published").exists()
    assert not list(tmp_path.glob(".staging-*"))


@pytest.mark.parametrize("cut", [0.5, 0.99])
def test_truncated_observation_gzip(run_dir, tmp_path, cut):
    path = run_dir / file_name("observation", 1)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(CorruptInputError, match=r"observation_ckpt\.1\.gz.*(corrupt|truncated)"):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)


def test_corrupt_gzip_bytes(run_dir, tmp_path):
    path = run_dir / file_name("reward", 0)
    data = bytearray(path.read_bytes())
    data[30:60] = b"\xff" * 30
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptInputError, match=r"reward_ckpt\.0\.gz"):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)


def test_array_lengths_disagree(run_dir, tmp_path):
    path = run_dir / file_name("action", 1)
    _rewrite(path, _load(path)[:-5])
    with pytest.raises(CorruptInputError, match=r"action_ckpt\.1\.gz: action has shape \(145,\)"):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)


def test_missing_element_file(run_dir, tmp_path):
    (run_dir / file_name("terminal", 0)).unlink()
    with pytest.raises(CorruptInputError, match=r"checkpoint 0 lacks its terminal file"):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)


def test_add_count_inconsistent_with_arrays(run_dir, tmp_path):
    path = run_dir / file_name("add_count", 1)
    _rewrite(path, np.array(int(_load(path)) + 7))
    with pytest.raises(CorruptInputError, match=r"add_count .* is inconsistent with the arrays"):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)


def test_final_log_overlap_mismatch(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "replay_logs"
    truth = write_run(
        folder, [play_episode(rng, int(n)) for n in rng.integers(20, 40, 10)], 150, compresslevel=1
    )
    final = truth.final_suffix
    path = folder / file_name("reward", final)
    _rewrite(path, _load(path) + 1.0)
    with pytest.raises(CorruptInputError, match=r"final log disagrees .* leave checkpoint"):
        decode_run(folder, list(range(final + 1)), tmp_path / "x", workers=1)


def test_a_failing_partition_leaves_the_others_alone(run_dir, tmp_path):
    good = tmp_path / "good"
    shutil.copytree(run_dir, good)
    other = tmp_path / "other-published"
    build_if_changed(
        LocalRoot(tmp_path), other, {"t": 1}, lambda tmp: decode_run(good, [0, 1], tmp, workers=1)
    )
    before = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    (run_dir / file_name("terminal", 0)).unlink()
    with pytest.raises(CorruptInputError):
        _decode_published(run_dir, tmp_path)
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file()} == before


def _gzip_npy(path, header_shape, dtype, payload_bytes):
    """A gzip .npy whose header declares ``header_shape`` and whose body is zeros."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": header_shape}
    )
    zeros = bytes(8 << 20)
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=1) as gz,
    ):
        gz.write(header.getvalue())
        for _ in range(payload_bytes // len(zeros)):
            gz.write(zeros)


def test_a_member_bomb_is_refused_from_its_header_before_it_is_inflated(run_dir, tmp_path):
    """A reward file of ~200 KB declaring 50M rewards (200 MB of zeros): refused because the
    observation has 150 rows, before one reward is inflated (the old reader inflated it all)."""
    import tracemalloc

    path = run_dir / file_name("reward", 1)
    _gzip_npy(path, (50_000_000,), np.float32, 200_000_000)
    assert path.stat().st_size < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(
            CorruptInputError,
            match=r"reward_ckpt\.1\.gz: reward has shape \(50000000,\) but observation has 150 "
            "rows",
        ):
            _decode_published(run_dir, tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20, f"{peak:,} bytes traced while refusing"
    _assert_nothing_published(tmp_path)


def test_a_header_declaring_more_than_deflate_can_hold_is_refused(run_dir, tmp_path):
    path = run_dir / file_name("observation", 0)
    _gzip_npy(path, (10**10, 84, 84), np.uint8, 0)
    with pytest.raises(
        CorruptInputError,
        match=r"observation_ckpt\.0\.gz: the array header declares "
        r"\(10000000000, 84, 84\) uint8 .* over the",
    ):
        _decode_published(run_dir, tmp_path)
    _assert_nothing_published(tmp_path)
