"""The hub stand-in speaks the protocol: huggingface_hub's own ``snapshot_download`` and
lerobot's own ``LeRobotDataset(repo_id)`` read a dataset through it (in a child process, where
``HF_ENDPOINT`` is read at import as those libraries read it), and its errors are the ones
huggingface_hub raises for the real hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

pytestmark = pytest.mark.integration
SPEC = LeRobotSpec(repo_id="lab/pick_place")

_CHILD = r"""
import json, sys
from pathlib import Path
from huggingface_hub import snapshot_download
snapshot = Path(snapshot_download("lab/pick_place", repo_type="dataset"))
files = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file())
from lerobot.datasets.lerobot_dataset import LeRobotDataset
ds = LeRobotDataset("lab/pick_place")
frame = ds[3]
print(json.dumps({
    "files": {f: (snapshot / f).read_bytes().hex() for f in files},
    "frames": len(ds), "episodes": ds.meta.total_episodes,
    "state": frame["observation.state"].tolist(), "revision": ds.revision,
}))
"""


@pytest.fixture
def published(hub, tmp_path):
    src = tmp_path / "src"
    write_lerobot_dataset(SPEC, src)
    folder = src / "lab" / "pick_place"
    hub.store.create_repo("lab/pick_place")
    hub.store.commit_folder("lab/pick_place", folder, tag="v3.0")
    return folder


def test_snapshot_download_and_lerobot_dataset_read_through_the_stand_in(hub, published, tmp_path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    env = {**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    local = sorted(str(p.relative_to(published)) for p in published.rglob("*") if p.is_file())
    assert sorted(f for f in got["files"] if f != ".gitattributes") == local
    for name in local:  # byte for byte what was committed
        assert bytes.fromhex(got["files"][name]) == (published / name).read_bytes(), name
    # lerobot chose the v3.0 tag, as on the hub, and reads what it reads from the folder
    assert got["revision"] == "v3.0"
    reference = LeRobotDataset(SPEC.repo_id, root=published)
    assert got["frames"] == len(reference) == sum(SPEC.lengths)
    assert got["episodes"] == len(SPEC.lengths)
    assert got["state"] == reference[3]["observation.state"].tolist()
    assert ("GET", "/api/datasets/lab/pick_place/refs") in hub.requests


def test_the_stand_in_errors_are_huggingface_hubs_own(hub, published):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    api = HfApi(endpoint=hub.url)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("lab/none")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("lab/pick_place", revision="v9.9")
    hub.store.create_repo("lab/gated", gated=True)
    with pytest.raises(GatedRepoError):
        api.dataset_info("lab/gated")
    assert HfApi(endpoint=hub.url, token="hf_test_token").dataset_info("lab/gated").sha
    hub.store.create_repo("lab/private", private=True)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("lab/private")


def test_tree_listings_are_paginated_as_the_hub_does(hub, published):
    from huggingface_hub import HfApi

    hub.page = 3  # the hub pages at 1,000; a few entries a page exercises the Link header
    from huggingface_hub.hf_api import RepoFile

    tree = list(
        HfApi(endpoint=hub.url).list_repo_tree(
            "lab/pick_place", repo_type="dataset", recursive=True
        )
    )
    files = [f.path for f in tree if isinstance(f, RepoFile)]
    assert len(tree) > 3 and len(files) == len(set(files))
    expected = {str(p.relative_to(published)) for p in published.rglob("*") if p.is_file()}
    assert set(files) - {".gitattributes"} == expected
    folders = {f.path for f in tree if not isinstance(f, RepoFile)}
    assert {"data", "meta", "meta/episodes"} <= folders


def test_huggingface_hubs_own_upload_lands_one_commit_and_skips_unchanged_files(hub, tmp_path):
    """``create_repo`` and ``upload_folder`` (LFS protocol: the stand-in does not speak Xet) make
    one commit whose files ``snapshot_download`` reads back byte for byte; uploading the same
    folder again sends no object and no commit; a stale parent commit is refused (412)."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    src = tmp_path / "src"
    write_lerobot_dataset(SPEC, src)
    folder = src / "lab" / "pick_place"
    api = HfApi(endpoint=hub.url, token="hf_test_token")
    api.create_repo("me/copy", repo_type="dataset")
    first = api.upload_folder(repo_id="me/copy", repo_type="dataset", folder_path=folder)
    lfs_files = [p for p in folder.rglob("*.parquet")]
    assert len(hub.uploads.uploaded) == len(lfs_files) > 0
    snapshot = snapshot_download("me/copy", repo_type="dataset", endpoint=hub.url)
    for path in (p for p in folder.rglob("*") if p.is_file()):
        assert (Path(snapshot) / path.relative_to(folder)).read_bytes() == path.read_bytes()
    info = api.dataset_info("me/copy")
    assert info.sha == first.oid
    tree = {f.path: f for f in api.list_repo_tree("me/copy", repo_type="dataset", recursive=True)}
    assert all(tree[str(p.relative_to(folder))].lfs for p in lfs_files)

    again = api.upload_folder(repo_id="me/copy", repo_type="dataset", folder_path=folder)
    assert again.oid == first.oid and len(hub.uploads.uploaded) == len(lfs_files)
    with pytest.raises(HfHubHTTPError) as stale:
        api.upload_file(
            path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="me/copy", repo_type="dataset",
            parent_commit=hub.store.commit_record("dataset", "me/copy", first.oid)["parent"],
        )  # fmt: skip
    assert stale.value.response.status_code == 412
    with pytest.raises(HfHubHTTPError) as anonymous:
        HfApi(endpoint=hub.url, token=False).create_repo("me/other", repo_type="dataset")
    assert anonymous.value.response.status_code == 401
