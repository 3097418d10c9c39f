"""Two settings with one meaning each: a gs:// root's local copy (EPISODE_WAREHOUSE_LOCAL_COPY,
or the resource's ``local_copy``) and an export's PNG scratch (EPISODE_WAREHOUSE_SCRATCH)."""

import logging

import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage.local import LocalArtifact
from resources import RunSettings, WarehouseStorage

ROOT = "gs://some-bucket/wh"


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch):
    for name in ("EPISODE_WAREHOUSE_LOCAL_COPY", "EPISODE_WAREHOUSE_SCRATCH", "TMPDIR"):
        monkeypatch.delenv(name, raising=False)


def _under(path, folder) -> bool:
    return path.parent == folder.resolve() and path.name.startswith("some-bucket-")


def test_the_local_copy_and_the_png_scratch_are_two_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", ROOT)
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "copies"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_SCRATCH", str(tmp_path / "frames"))
    storage = WarehouseStorage()
    layout = storage.layout()
    assert _under(layout.folder, tmp_path / "copies")
    assert layout.root.url == ROOT and layout.root.folder == layout.folder
    assert RunSettings().scratch_dir() == tmp_path / "frames"
    assert not (tmp_path / "frames").exists() or not any((tmp_path / "frames").iterdir())


def test_a_resource_value_reaches_the_bucket_root(tmp_path, monkeypatch):
    """An explicit resource value wins over the environment (it used to be ignored)."""
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", ROOT)
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "from-env"))
    layout = WarehouseStorage(local_copy=str(tmp_path / "explicit")).layout()
    assert _under(layout.folder, tmp_path / "explicit")
    assert layout.root.bucket is not None and layout.root.bucket.url == ROOT
    remote = layout.root.artifact_at(layout.ted_dir("atari", "Pong/1"), "meta.json")
    assert remote.rel == "ted/atari/Pong/1" and remote.root.url == ROOT


def test_the_old_name_still_places_the_local_copy_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("EPISODE_WAREHOUSE_SCRATCH", str(tmp_path / "old"))
    from episode_warehouse import settings

    settings._warn_legacy_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger="episode_warehouse.settings"):
        layout = WarehouseLayout.from_root(ROOT)
    assert _under(layout.folder, tmp_path / "old")
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "EPISODE_WAREHOUSE_LOCAL_COPY" in warning and str(tmp_path / "old") in warning


def test_two_roots_never_share_a_local_copy(tmp_path):
    a = WarehouseLayout.from_root(ROOT, local_copy=tmp_path)
    b = WarehouseLayout.from_root(ROOT + "2", local_copy=tmp_path)
    assert a.folder != b.folder and a.folder.parent == b.folder.parent == tmp_path.resolve()


def test_an_artifact_outside_the_local_copy_is_refused(tmp_path):
    """A bucket root's artifacts are built in its local copy; a path elsewhere names no object
    of the bucket (it used to be taken for a local artifact)."""
    layout = WarehouseLayout.from_root(ROOT, local_copy=tmp_path / "copies")
    with pytest.raises(ConfigError, match="must be built in its local copy") as err:
        layout.root.artifact_at(tmp_path / "elsewhere" / "ted", "meta.json")
    assert str(tmp_path / "elsewhere" / "ted") in str(err.value)


def test_a_folder_is_a_local_root_even_when_it_is_a_bucket_roots_copy(tmp_path):
    """The root is chosen from the setting, never from marker files found under it."""
    copy = WarehouseLayout.from_root(ROOT, local_copy=tmp_path).folder
    local = WarehouseLayout.from_root(copy)
    assert not hasattr(local.root, "bucket") and local.url == str(copy)
    assert isinstance(local.root.artifact_at(local.ted_dir("atari", "Pong/1")), LocalArtifact)
