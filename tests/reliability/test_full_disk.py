"""A full disk while writing: a clear error, the staging folder gone, the old version intact."""

import os
import subprocess

import numpy as np
import pytest

from episode_warehouse.errors import DiskFullError
from episode_warehouse.incremental import build_if_changed
from episode_warehouse.sources.atari.decode import decode_run
from episode_warehouse.storage.local import LocalRoot
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    rc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    ).returncode
    if rc != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); see docs/reliability.md")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "in-worker-processes"])
def test_disk_full_while_decoding(small_disk, tmp_path, workers):
    """The frames are written by this process (1) or by worker processes (2): the same error."""
    rng = np.random.default_rng(0)
    small = tmp_path / "small-run"
    write_run(
        small, [play_episode(rng, 40) for _ in range(6)], 100, final_log=False, compresslevel=1
    )
    big = tmp_path / "big-run"
    write_run(
        big,
        [play_episode(rng, int(n)) for n in rng.integers(100, 300, 20)],
        1000,
        final_log=False,
        compresslevel=1,
    )
    target = small_disk / "decoded"
    build_if_changed(
        LocalRoot(tmp_path), target, {"v": 1}, lambda tmp: decode_run(small, [0, 1], tmp, workers=1)
    )
    before = {p.name: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    n = len(list(big.glob("add_count_ckpt.*")))
    with pytest.raises(DiskFullError, match="disk is full.*previous version is intact") as err:
        build_if_changed(
            LocalRoot(tmp_path),
            target,
            {"v": 2},
            lambda tmp: decode_run(big, list(range(n)), tmp, workers=workers),
        )
    assert str(target) in str(err.value) and "EPISODE_WAREHOUSE_ROOT" in str(err.value)
    assert {p.name: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert [p.name for p in small_disk.iterdir() if p.name.startswith(".staging-")] == []
    assert os.statvfs(small_disk).f_bfree > 0
