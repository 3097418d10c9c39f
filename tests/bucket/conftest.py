"""A fresh bucket root on the session's GCS emulator, and TEDs built into it."""

import itertools

import pytest

from episode_warehouse.gcs import gcs_client
from episode_warehouse.paths import WarehouseLayout

_names = itertools.count()


@pytest.fixture
def bucket_url(gcs_endpoint, tmp_path, monkeypatch) -> str:
    """``gs://<new bucket>/wh`` with its own scratch and cache folders."""
    name = f"warehouse-{next(_names)}-{tmp_path.name[-12:].lower().replace('_', '-')}"
    gcs_client(gcs_endpoint).create_bucket(name)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "scratch"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache"))
    url = f"gs://{name}/wh"
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", url)
    return url


def layout_of(url: str) -> WarehouseLayout:
    """The bucket root ``url`` with its local copy under ``$EPISODE_WAREHOUSE_LOCAL_COPY``."""
    return WarehouseLayout.from_root(url)


def root_of(url: str):
    return layout_of(url).root


def scratch_of(url: str):
    """The local copy of the bucket root ``url``."""
    return root_of(url).folder
