"""The OpenX WebDataset repack read from the hub (the stand-in), downloaded and streamed, into
the TED a folder of the same tars gives; the commit read is in the record; a new revision
fetches only the shard it changed."""

from __future__ import annotations

import json

import pytest
import torch

from episode_warehouse import open_ted
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.openx_writer import DatasetSpec, write_dataset

pytestmark = pytest.mark.integration
REPO = "jxu/OpenX-Embodiment"


def _ted_equal(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert torch.equal(torch.as_tensor(a.get(key)), torch.as_tensor(b.get(key))), key


def test_the_repack_from_the_hub_equals_its_folder_build(warehouse_env, hub, monkeypatch, tmp_path):
    folder = tmp_path / "mirror"
    write_dataset(folder, DatasetSpec("cmu_stretch"), [[6, 9], [4, 1]])
    hub.store.create_repo(REPO)
    first = hub.store.commit_folder(REPO, folder)
    monkeypatch.setenv("OPENX_URL", str(folder))
    local_root = tmp_path / "from-folder"
    args = ["materialize", "openx", "cmu_stretch", "--root", str(local_root), "--through", "ted"]
    with dagster_home_of(local_root):
        assert main(args) == 0
    local = open_ted("openx", "cmu_stretch", root=local_root)

    monkeypatch.setenv("OPENX_URL", f"hf://datasets/{REPO}")
    assert main(["materialize", "openx", "cmu_stretch", "--through", "ted"]) == 0
    raw = json.loads((warehouse_env / "raw" / "openx" / "cmu_stretch" / "meta.json").read_text())
    assert raw["revision"] == first
    _ted_equal(open_ted("openx", "cmu_stretch", root=warehouse_env), local)

    monkeypatch.setenv("OPENX_MODE", "streaming")
    streamed_root = tmp_path / "streamed"
    args = ["materialize", "openx", "cmu_stretch", "--root", str(streamed_root), "--through", "ted"]
    with dagster_home_of(streamed_root):
        assert main(args) == 0
    assert not list((streamed_root / "raw" / "openx" / "cmu_stretch").glob("*.tar"))
    _ted_equal(open_ted("openx", "cmu_stretch", root=streamed_root), local)
    monkeypatch.delenv("OPENX_MODE")

    # a new revision replacing the second shard: only it is downloaded again
    other = tmp_path / "other"
    write_dataset(other, DatasetSpec("cmu_stretch"), [[6, 9], [3, 5]], seed=4)
    name = "cmu_stretch/cmu_stretch_00001.tar"
    hub.store.commit(REPO, {name: (other / name).read_bytes()})
    before = len(hub.fetched())
    assert main(["materialize", "openx", "cmu_stretch", "--through", "raw"]) == 0
    assert hub.fetched()[before:] == [name]
    again = json.loads((warehouse_env / "raw" / "openx" / "cmu_stretch" / "meta.json").read_text())
    assert again["revision"] != first and again["copied"] == 1
    shard = warehouse_env / "raw" / "openx" / "cmu_stretch" / "cmu_stretch_00001.tar"
    assert shard.read_bytes() == (other / name).read_bytes()
