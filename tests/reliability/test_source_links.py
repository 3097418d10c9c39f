"""Local source folders: links are never followed out of them, and mirroring never widens a
file's permissions (a 0600 file in a source stays 0600 in ``raw/`` and is never a 0644 copy)."""

import os
import stat

import pytest

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.lerobot.mirror import mirror_dataset
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.storage.local import LocalRoot


def _dataset(folder):
    (folder / "meta").mkdir(parents=True)
    (folder / "data" / "chunk-000").mkdir(parents=True)
    (folder / "meta" / "info.json").write_text('{"codebase_version": "v3.0"}')
    return folder


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("api-key")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_link_in_a_local_lerobot_source_is_refused_naming_it(tmp_path, secret, kind):
    ds = _dataset(tmp_path / "src" / "me" / "ds")
    link = ds / "data" / "chunk-000" / ("file-000.parquet" if kind == "file" else "more")
    link.symlink_to(secret if kind == "file" else secret.parent)
    layout = WarehouseLayout.from_root(tmp_path / "wh")
    with pytest.raises(CorruptInputError, match="symbolic link") as err:
        mirror_dataset(
            open_blob_store(str(tmp_path / "src")),
            "me/ds",
            layout.raw_dir("lerobot", "me/ds"),
            root=layout.root,
            code_version="t",
        )
    assert str(link) in str(err.value) and "cp -L" in str(err.value)
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").rglob("*.parquet"))


def test_mirroring_keeps_a_private_file_private(tmp_path):
    ds = _dataset(tmp_path / "src" / "me" / "ds")
    private = ds / "data" / "chunk-000" / "file-000.parquet"
    private.write_bytes(b"rows")
    private.chmod(0o600)
    (ds / "meta" / "info.json").chmod(0o644)
    layout = WarehouseLayout.from_root(tmp_path / "wh")
    target = layout.raw_dir("lerobot", "me/ds")
    mirror_dataset(
        open_blob_store(str(tmp_path / "src")),
        "me/ds",
        target,
        root=LocalRoot(tmp_path),
        code_version="t",
    )
    copied = target / "data" / "chunk-000" / "file-000.parquet"
    assert copied.read_bytes() == b"rows"
    assert stat.S_IMODE(copied.stat().st_mode) & 0o077 == 0  # not group/other readable
    mode = stat.S_IMODE((target / "meta" / "info.json").stat().st_mode)
    assert mode & 0o077 == 0o644 & 0o077 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_linked_tar_in_a_local_openx_mirror_is_refused(tmp_path, secret):
    (tmp_path / "openx" / "toy").mkdir(parents=True)
    (tmp_path / "openx" / "toy" / "toy_00000.tar").symlink_to(secret)
    with pytest.raises(CorruptInputError, match="symbolic link"):
        list_shards(str(tmp_path / "openx"), "toy")


def test_a_linked_atari_checkpoint_is_refused(tmp_path, secret):
    logs = tmp_path / "src" / "Pong" / "1" / "replay_logs"
    logs.mkdir(parents=True)
    (logs / "$store$_observation_ckpt.0.gz").symlink_to(secret)
    with pytest.raises(CorruptInputError, match="symbolic link"):
        open_blob_store(str(tmp_path / "src")).list("Pong/1/replay_logs/")
