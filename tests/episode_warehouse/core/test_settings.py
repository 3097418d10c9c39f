"""One Settings object: an explicit value beats the environment, which beats the default, and
what a root was resolved with is what it uses (no later environment read changes it)."""

import tempfile
from pathlib import Path

import pytest

from episode_warehouse.hub.client import HubClient
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.settings import Settings
from resources.warehouse import WarehouseStorage

NAMES = (
    "EPISODE_WAREHOUSE_ROOT",
    "EPISODE_WAREHOUSE_LOCAL_COPY",
    "EPISODE_WAREHOUSE_SCRATCH",
    "EPISODE_WAREHOUSE_CACHE",
    "STORAGE_EMULATOR_HOST",
    "HF_ENDPOINT",
    "HF_HUB_CACHE",
    "HF_HOME",
)


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)


def test_the_defaults():
    s = Settings.from_env({})
    assert s.root == "warehouse-data"
    assert s.local_copy == (Path(tempfile.gettempdir()) / "episode-warehouse-scratch").resolve()
    assert s.cache == Path("~/.cache/episode-warehouse").expanduser().resolve()
    assert s.gcs_endpoint is None and s.hub_cache is None
    assert s.hub_endpoint == "https://huggingface.co"


def test_an_explicit_value_beats_the_variable(tmp_path):
    env = {
        "EPISODE_WAREHOUSE_ROOT": "gs://env/wh",
        "EPISODE_WAREHOUSE_LOCAL_COPY": str(tmp_path / "env-copy"),
        "EPISODE_WAREHOUSE_CACHE": str(tmp_path / "env-cache"),
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:1",
        "HF_ENDPOINT": "http://hub.example/",
        "HF_HOME": str(tmp_path / "hf"),
    }
    from_env = Settings.from_env(env)
    assert from_env.root == "gs://env/wh" and from_env.local_copy == tmp_path / "env-copy"
    assert from_env.cache == tmp_path / "env-cache"
    assert from_env.gcs_endpoint == "http://127.0.0.1:1"
    assert from_env.hub_endpoint == "http://hub.example"  # trailing slash dropped
    assert from_env.hub_cache == str(tmp_path / "hf" / "hub")
    explicit = Settings.from_env(
        env,
        root=tmp_path / "wh",
        local_copy=tmp_path / "copy",
        cache=tmp_path / "cache",
        gcs_endpoint="http://127.0.0.1:2",
        hub_endpoint="http://other.example",
    )
    assert explicit.root == str(tmp_path / "wh") and explicit.local_copy == tmp_path / "copy"
    assert explicit.cache == tmp_path / "cache" and explicit.gcs_endpoint == "http://127.0.0.1:2"
    assert explicit.hub_endpoint == "http://other.example"
    assert Settings.from_env(env, root="").root == "gs://env/wh"  # empty means unset


def test_a_bucket_root_keeps_what_it_was_resolved_with(tmp_path, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache"))
    layout = WarehouseLayout.from_root("gs://bkt/wh", local_copy=tmp_path / "copies")
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:10")
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "later"))
    bucket = layout.root.bucket
    assert bucket is not None and bucket.endpoint == "http://127.0.0.1:9"
    assert bucket.cache() == tmp_path / "cache" / "bkt" / "wh"
    assert layout.folder.parent == tmp_path / "copies"


def test_the_resources_values_reach_the_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "from-env"))
    storage = WarehouseStorage(root=str(tmp_path / "explicit"))
    assert storage.settings().root == str(tmp_path / "explicit")
    assert storage.layout().folder == tmp_path / "explicit"
    assert WarehouseStorage().layout().folder == tmp_path / "from-env"


def test_the_hub_client_takes_its_endpoint_and_cache_from_the_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:3/")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    client = HubClient()
    assert client.endpoint == "http://127.0.0.1:3" and client.cache_dir == str(
        tmp_path / "hub-cache"
    )
    assert HubClient(endpoint="http://127.0.0.1:4").endpoint == "http://127.0.0.1:4"
