"""A LeRobot dataset read from the hub (the stand-in, through huggingface_hub) into the same TED
as from a folder; the commit read is in the record and the lineage; a new revision fetches only
the files it changed; every refusal names the repo and the fix, before any data file is fetched."""

from __future__ import annotations

import json

import pytest
import torch

from episode_warehouse import open_ted
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

pytestmark = pytest.mark.integration
SPEC = LeRobotSpec(repo_id="lab/pick_place")


@pytest.fixture
def folder(tmp_path):
    write_lerobot_dataset(SPEC, tmp_path / "src")
    return tmp_path / "src" / "lab" / "pick_place"


def _raw(root):
    return json.loads((root / "raw" / "lerobot" / "lab" / "pick_place" / "meta.json").read_text())


def test_a_dataset_from_the_hub_equals_its_folder_build_and_a_new_revision_fetches_its_changes(
    warehouse_env, hub, folder, monkeypatch, tmp_path
):
    hub.store.create_repo(SPEC.repo_id)
    first = hub.store.commit_folder(SPEC.repo_id, folder, tag="v3.0")
    hub.store.commit(SPEC.repo_id, {"README.md": b"newer, untagged\n"})  # main moves past v3.0
    monkeypatch.delenv("LEROBOT_URL", raising=False)  # the default: hf://datasets
    assert main(["materialize", "lerobot", SPEC.repo_id]) == 0
    raw = _raw(warehouse_env)
    assert raw["revision"] == first  # the v3.0 tag, as LeRobotDataset chooses
    assert raw["source_url"] == f"hf://datasets/{SPEC.repo_id}@{first}"
    td = open_ted("lerobot", SPEC.repo_id, root=warehouse_env)
    meta = json.loads(
        (warehouse_env / "ted" / "lerobot" / "lab" / "pick_place" / "meta.json").read_text()
    )
    assert meta["source_url"] == raw["source_url"]  # the lineage names the commit

    other = tmp_path / "from-folder"
    monkeypatch.setenv("LEROBOT_URL", str(folder.parent.parent))
    with dagster_home_of(other):
        assert (
            main(["materialize", "lerobot", SPEC.repo_id, "--root", str(other), "--through", "ted"])
            == 0
        )
    here = open_ted("lerobot", SPEC.repo_id, root=other)
    assert set(here.keys(True, True)) == set(td.keys(True, True))
    for key in td.keys(True, True):
        assert torch.equal(torch.as_tensor(here.get(key)), torch.as_tensor(td.get(key))), key

    # a new revision changing one file: only that file is fetched again
    stats = json.loads((folder / "meta" / "stats.json").read_text())
    changed = (json.dumps(stats, indent=2) + "\n").encode()
    second = hub.store.commit(SPEC.repo_id, {"meta/stats.json": changed}, tag="v3.0")
    monkeypatch.delenv("LEROBOT_URL")
    before = len(hub.fetched())
    assert main(["materialize", "lerobot", SPEC.repo_id, "--through", "raw"]) == 0
    again = _raw(warehouse_env)
    assert again["revision"] == second
    # meta/info.json is read first on every run (the version check, ~1 KB); of the files
    # mirrored, only the changed one is downloaded, the others are linked from the last version
    assert [f for f in hub.fetched()[before:] if f != "meta/info.json"] == ["meta/stats.json"]
    assert (
        warehouse_env / "raw" / "lerobot" / "lab" / "pick_place" / "meta" / "stats.json"
    ).read_bytes() == changed


def test_hub_refusals_name_the_repo_and_the_fix(warehouse_env, hub, folder, monkeypatch, capsys):
    monkeypatch.delenv("LEROBOT_URL", raising=False)
    assert main(["materialize", "lerobot", "lab/none"]) == 2
    err = capsys.readouterr().err
    assert "hf://datasets/lab/none" in err and "no such repo on the hub, or it is private" in err
    assert "HF_TOKEN" in err

    hub.store.create_repo("lab/gated", gated=True)
    hub.store.commit_folder("lab/gated", folder, tag="v3.0")
    assert main(["materialize", "lerobot", "lab/gated", "--through", "raw"]) == 2
    assert "gated" in capsys.readouterr().err
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")  # read where it is needed, never printed
    assert main(["materialize", "lerobot", "lab/gated", "--through", "raw"]) == 0
    assert "hf_test_token" not in capsys.readouterr().err

    # tagged v2.0 only (v2.1 is read, docs: LeRobot v2.1): refused with lerobot's converter
    # before any data file is fetched
    hub.store.create_repo("lab/old")
    hub.store.commit_folder("lab/old", folder, tag="v2.0")
    assert main(["materialize", "lerobot", "lab/old"]) == 2
    err = capsys.readouterr().err
    assert "tagged v2.0" in err and "convert_dataset_v20_to_v21 --repo-id=lab/old" in err
    # untagged, and its info.json says v2.0: refused from the metadata alone
    info = json.loads((folder / "meta" / "info.json").read_text())
    hub.store.create_repo("lab/untagged")
    hub.store.commit_folder("lab/untagged", folder)
    hub.store.commit(
        "lab/untagged",
        {"meta/info.json": json.dumps({**info, "codebase_version": "v2.0"}).encode()},
    )
    assert main(["materialize", "lerobot", "lab/untagged"]) == 2
    assert "a LeRobot v2.0 dataset" in capsys.readouterr().err
    refused = [
        path
        for method, path in hub.requests
        if method == "GET" and "/resolve/" in path and ("lab/old" in path or "lab/untagged" in path)
    ]
    assert refused and all("/meta/info.json" in path for path in refused)  # no data file


def test_hub_downloads_survive_faults_and_reject_altered_bytes(
    warehouse_env, hub, folder, monkeypatch
):
    from tests.reliability.fault_proxy import FaultProxy

    hub.store.create_repo(SPEC.repo_id)
    hub.store.commit_folder(SPEC.repo_id, folder, tag="v3.0")
    monkeypatch.delenv("LEROBOT_URL", raising=False)
    faults = ["503", "reset", "truncate", "corrupt", "corrupt"]
    with FaultProxy(hub.url, faults) as proxy:
        monkeypatch.setenv("HF_ENDPOINT", proxy.url)
        monkeypatch.setenv("LEROBOT_TIMEOUT_S", "5")
        assert main(["materialize", "lerobot", SPEC.repo_id, "--through", "raw"]) == 0
    assert sum(proxy.injected.values()) == len(faults)
    raw = warehouse_env / "raw" / "lerobot" / "lab" / "pick_place"
    for path in folder.rglob("*"):
        if path.is_file():  # every file as committed: the altered copies were refused
            assert (raw / path.relative_to(folder)).read_bytes() == path.read_bytes(), path


def test_the_sensor_watches_named_hub_repos_by_their_commit(hub, folder, monkeypatch):
    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.sources.lerobot.fingerprints import lerobot_fingerprints

    hub.store.create_repo(SPEC.repo_id)
    hub.store.commit_folder(SPEC.repo_id, folder, tag="v3.0")
    before = lerobot_fingerprints(open_blob_store("hf://datasets"), [SPEC.repo_id])
    hub.store.commit(SPEC.repo_id, {"README.md": b"untagged\n"})  # main moves, v3.0 does not
    assert lerobot_fingerprints(open_blob_store("hf://datasets"), [SPEC.repo_id]) == before
    hub.store.commit(SPEC.repo_id, {"meta/stats.json": b"{}"}, tag="v3.0")
    after = lerobot_fingerprints(open_blob_store("hf://datasets"), [SPEC.repo_id])
    assert after.keys() == {SPEC.repo_id} and after != before
