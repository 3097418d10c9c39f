"""``warehouse publish``: a LeRobot export pushed to the hub stand-in in one commit, with a
dataset card; read back by lerobot's own ``LeRobotDataset(repo_id)`` (a child process, as a
user would) it equals the export; a rerun uploads nothing; an interrupted publish leaves the
repo as it was and a rerun completes it; the token never shows in output or logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.loading import select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import EXPORT_RECORD
from tests.helpers import build_atari
from warehouse_cli.main import main

# one worker runs the module: its module fixture is built once, not once a worker
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("hub_publish")]
TOKEN = "hf_test_token"
QUERY = "SELECT source, partition, episode, start, length FROM episodes WHERE length > 30"
REPO = "me/pong-long"


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A warehouse root with one selection export (three parquet files: LFS on the hub)."""
    root = tmp_path_factory.mktemp("publish") / "wh"
    _export_pong_long(WarehouseLayout.local(root), str(root))
    return root


def _export_pong_long(layout: WarehouseLayout, setting: str) -> None:
    """Build Pong/3 into ``layout`` and export the QUERY selection as ``pong-long``."""
    build_atari(layout, "Pong/3", 3, capacity=300, episodes=8, lengths=(20, 70))
    rows = select_episodes(QUERY, root=setting).rows()
    export_lerobot(
        ExportRequest("pong-long", str(layout.folder), rows, query=QUERY),
        layout.lerobot_dir("pong-long"),
        root=layout.root,
        workers=1,
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _head(hub, repo=REPO, branch="main") -> str:
    return hub.store.settings("dataset", repo)["branches"][branch]


_READ_BACK = r"""
import json, sys
import torch
from lerobot.datasets.lerobot_dataset import LeRobotDataset
hub, local = LeRobotDataset(sys.argv[1]), LeRobotDataset(sys.argv[1], root=sys.argv[2])
same = all(
    all(torch.equal(torch.as_tensor(hub[i][k]), torch.as_tensor(local[i][k])) for k in local[i]
        if k != "task")
    and hub[i]["task"] == local[i]["task"]
    for i in range(len(local))
)
print(json.dumps({"frames": len(hub), "episodes": hub.meta.total_episodes, "same": same,
                  "revision": hub.revision, "fps": hub.fps}))
"""


def test_a_publish_is_one_commit_that_lerobot_reads_back_as_the_export(
    hub, export, monkeypatch, capsys
):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    folder = WarehouseLayout.local(export).lerobot_dir("pong-long")
    argv = ["-v", "publish", "pong-long", f"hf://datasets/{REPO}", "--root", str(export)]
    assert main(argv) == 0
    printed = capsys.readouterr()
    out = printed.out
    assert "publishing to hf://datasets/me/pong-long@main" in printed.err  # the log is here
    assert TOKEN not in out + printed.err
    assert f"hf://datasets/{REPO}@" in out and 'LeRobotDataset("me/pong-long")' in out

    settings = hub.store.settings("dataset", REPO)
    head = settings["branches"]["main"]
    record = hub.store.commit_record("dataset", REPO, head)
    first = hub.store.commit_record("dataset", REPO, record["parent"])
    assert first["parent"] is None  # one commit on the repo's initial one
    assert settings["tags"]["v3.0"] == head  # what LeRobotDataset(repo_id) reads
    assert not settings["private"]
    local = _files(folder)
    tree = hub.store.tree("dataset", REPO, head)
    assert sorted(tree) == sorted([*local, ".gitattributes", "README.md"])
    for path, data in local.items():  # byte for byte the export, parquet files as LFS
        entry = tree[path]
        assert hub.store.object_path("dataset", REPO, entry["sha256"]).read_bytes() == data
        assert entry["lfs"] == path.endswith(".parquet"), path
    assert len(hub.uploads.uploaded) == sum(p.endswith(".parquet") for p in local)

    card = hub.store.object_path("dataset", REPO, tree["README.md"]["sha256"]).read_text()
    header = yaml.safe_load(card.split("---")[1])
    info = json.loads(local["meta/info.json"])
    assert header["task_categories"] == ["robotics"] and "LeRobot" in header["tags"]
    assert header["fps"] == info["fps"] and header["robot_type"] == info["robot_type"]
    assert header["license"] == "other"  # the sources' licenses are not known here
    meta = json.loads(local[EXPORT_RECORD])
    ted = meta["inputs"]["teds"]["atari:Pong/3"]
    assert QUERY in card and f"`{ted}`" in card
    assert f"**{meta['episodes']} episodes** ({meta['frames']} frames" in card
    assert "| atari | Pong/3 |" in card and 'LeRobotDataset("me/pong-long")' in card

    env = {**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    env.pop("HF_TOKEN")  # a public repo reads without one
    child = subprocess.run(
        [sys.executable, "-c", _READ_BACK, REPO, str(folder)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got == {
        "frames": meta["frames"], "episodes": meta["episodes"], "same": True,
        "revision": "v3.0", "fps": info["fps"],
    }  # fmt: skip


def test_a_rerun_uploads_nothing_and_a_changed_repo_is_made_the_export_again(
    hub, export, monkeypatch, capsys
):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    argv = ["publish", "pong-long", f"hf://datasets/{REPO}", "--root", str(export)]
    assert main(argv) == 0
    head, puts = _head(hub), len(hub.uploads.uploaded)
    capsys.readouterr()
    assert main(argv) == 0
    assert _head(hub) == head and len(hub.uploads.uploaded) == puts  # no commit, no upload
    assert "0 file(s) uploaded" in capsys.readouterr().out

    # someone edits the card and adds a file: the publish restores the card, deletes the file
    hub.store.commit(REPO, {"README.md": b"edited\n", "notes/extra.txt": b"x"})
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 file(s) uploaded" in out and "1 deleted" in out
    tree = hub.store.tree("dataset", REPO, _head(hub))
    assert "notes/extra.txt" not in tree
    before = hub.store.tree("dataset", REPO, head)
    assert tree == before  # exactly the first publish again
    assert len(hub.uploads.uploaded) == puts
    assert hub.store.settings("dataset", REPO)["tags"]["v3.0"] == _head(hub)


_PUBLISH = r"""
import sys
from warehouse_cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_interrupted_publish_leaves_the_repo_as_it_was_and_a_rerun_completes_it(
    hub, export, tmp_path, monkeypatch
):
    """The publisher is killed while its second LFS object is on the wire: nothing of it is
    in the repo; the rerun sends only the objects the hub does not have yet, in one commit."""
    hub.store.create_repo(REPO)
    old = hub.store.commit(REPO, {"README.md": b"an older dataset\n", "data/old.parquet": b"o"})
    hub.uploads.pause_uploads_after = 1
    env = {**os.environ, "HF_TOKEN": TOKEN, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    argv = ["publish", "pong-long", f"hf://datasets/{REPO}", "--root", str(export)]
    child = subprocess.Popen(
        [sys.executable, "-c", _PUBLISH, *argv],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while sum(m == "PUT" for m, _ in hub.requests) < 2:  # the second upload is held
            if child.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the publish ended first: {child.communicate()[1][-2000:]!r}")
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        hub.uploads.release()
        if child.poll() is None:
            child.kill()
    assert _head(hub) == old, "\n".join(str(r) for r in hub.requests if r[0] != "GET")
    assert sorted(hub.store.tree("dataset", REPO, old)) == [
        ".gitattributes",
        "README.md",
        "data/old.parquet",
    ]
    assert "v3.0" not in hub.store.settings("dataset", REPO)["tags"]
    sent = len(hub.uploads.uploaded)
    assert sent >= 1

    hub.uploads.pause_uploads_after = None
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert main(argv) == 0
    folder = WarehouseLayout.local(export).lerobot_dir("pong-long")
    parquet = [p for p in _files(folder) if p.endswith(".parquet")]
    # every object was sent once in all (the held one may have landed after the kill)
    assert len(hub.uploads.uploaded) == len(set(hub.uploads.uploaded)) == len(parquet)
    head = _head(hub)
    assert hub.store.commit_record("dataset", REPO, head)["parent"] == old
    tree = hub.store.tree("dataset", REPO, head)
    assert "data/old.parquet" not in tree and set(parquet) <= set(tree)


def test_refusals_name_the_fix_and_never_the_token(hub, export, monkeypatch, capsys):
    secret = "hf_not_a_real_token_123"
    monkeypatch.setenv("HF_TOKEN", secret)
    root = ["--root", str(export)]
    assert main(["-v", "publish", "pong-long", f"hf://datasets/{REPO}", *root]) == 2
    printed = capsys.readouterr()
    assert "HF_TOKEN" in printed.err and "write access" in printed.err
    assert secret not in printed.out + printed.err

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert main(["publish", "nothing-here", f"hf://datasets/{REPO}", *root]) == 2
    assert "warehouse export nothing-here" in capsys.readouterr().err
    assert main(["publish", "pong-long", "hf://models/me/x", *root]) == 2
    assert "hf://datasets/OWNER/NAME" in capsys.readouterr().err
    assert main(["publish", "pong-long", "hf://datasets/me/../x", *root]) == 2
    capsys.readouterr()
    hub.store.create_repo(REPO)
    hub.store.tag(REPO, "release")
    assert (
        main(["publish", "pong-long", f"hf://datasets/{REPO}", "--revision", "release", *root]) == 2
    )
    assert "is a tag of the repo, not a branch" in capsys.readouterr().err
    sha = _head(hub)
    assert main(["publish", "pong-long", f"hf://datasets/{REPO}@{sha}", *root]) == 2
    assert "a publish goes to a branch" in capsys.readouterr().err


def test_a_branch_and_a_private_repo(hub, export, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    root = ["--root", str(export)]
    argv = [
        "publish",
        "pong-long",
        "hf://datasets/me/private",
        "--private",
        "--revision",
        "curated",
    ]
    assert main([*argv, *root]) == 0
    assert 'revision="curated"' in capsys.readouterr().out
    settings = hub.store.settings("dataset", "me/private")
    assert settings["private"] and set(settings["branches"]) == {"main", "curated"}
    assert "v3.0" not in settings["tags"]  # main was not published: the tag is not moved
    tree = hub.store.tree("dataset", "me/private", settings["branches"]["curated"])
    card = hub.store.object_path("dataset", "me/private", tree["README.md"]["sha256"]).read_text()
    assert 'revision="curated"' in card
    assert sorted(hub.store.tree("dataset", "me/private", settings["branches"]["main"])) == [
        ".gitattributes"
    ]


def test_the_dagster_job_publishes_a_named_export(hub, export, monkeypatch):
    """``publish_to_hub`` from the code location, configured as the Launchpad would: the hub
    repo shows as asset ``hub/me/from-dagster`` with the commit; a refusal fails once."""
    import dagster as dg

    from assets.retries import RUN_RETRY_ON_STEP_FAILURE_TAG
    from definitions import defs

    job = defs.get_job_def("publish_to_hub")

    def run_config(repo: str) -> dict:
        return {
            "ops": {"publish_export_to_hub": {"config": {"export": "pong-long", "repo": repo}}},
            "resources": {"warehouse": {"config": {"root": str(export)}}},
        }

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(run_config("me/from-dagster"), instance=instance)
        assert result.success
        (event,) = result.get_asset_materialization_events()
        materialization = event.step_materialization_data.materialization
        assert materialization.asset_key == dg.AssetKey(["hub", "me", "from-dagster"])
        assert materialization.metadata["commit"].value == _head(hub, "me/from-dagster")
        assert (
            materialization.metadata["uploaded"].value
            == len(_files(WarehouseLayout.local(export).lerobot_dir("pong-long"))) + 1
        )  # and the card

        monkeypatch.setenv("HF_TOKEN", "hf_wrong")
        failed = job.execute_in_process(
            run_config("me/refused"), instance=instance, raise_on_error=False
        )
        assert not failed.success
        assert instance.get_run_by_id(failed.run_id).tags[RUN_RETRY_ON_STEP_FAILURE_TAG] == "false"
        assert "write access" in str(failed.get_step_failure_events()[0].step_failure_data.error)


def test_a_license_stated_by_the_sources_card_is_carried_to_the_published_card(
    hub, warehouse_env, tmp_path, monkeypatch
):
    """A LeRobot dataset read from the hub whose card says ``license: apache-2.0``: the raw
    record keeps it, and the partition's export published again carries it in its header."""
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    spec = LeRobotSpec(repo_id="lab/licensed")
    write_lerobot_dataset(spec, tmp_path / "src")
    folder = tmp_path / "src" / "lab" / "licensed"
    (folder / "README.md").write_text("---\nlicense: apache-2.0\ntags: [LeRobot]\n---\n# hi\n")
    hub.store.create_repo(spec.repo_id)
    hub.store.commit_folder(spec.repo_id, folder, tag="v3.0")
    monkeypatch.delenv("LEROBOT_URL", raising=False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert main(["materialize", "lerobot", spec.repo_id]) == 0
    raw = json.loads((warehouse_env / "raw/lerobot/lab/licensed/meta.json").read_text())
    assert raw["license"] == "apache-2.0"
    assert main(["publish", "lerobot-lab-licensed", "hf://datasets/me/relicensed"]) == 0
    tree = hub.store.tree("dataset", "me/relicensed", _head(hub, "me/relicensed"))
    card = hub.store.object_path("dataset", "me/relicensed", tree["README.md"]["sha256"])
    text = card.read_text()
    assert yaml.safe_load(text.split("---")[1])["license"] == "apache-2.0"
    assert "as every source above states it" in text and "| apache-2.0 |" in text


def test_private_into_an_existing_public_repo_is_refused(hub, export, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.store.create_repo("me/public")
    head = _head(hub, "me/public")
    argv = ["publish", "pong-long", "hf://datasets/me/public", "--root", str(export)]
    assert main([*argv, "--private"]) == 2
    assert "exists and is public" in capsys.readouterr().err
    assert _head(hub, "me/public") == head and not hub.uploads.uploaded


def test_a_publish_through_faults_makes_exactly_one_commit(hub, export, monkeypatch, capsys):
    """Through the fault proxy: a 503 on the commit is retried; a commit that lands but whose
    answer is lost is retried, finds the branch moved to exactly its files, and is done; the
    repo gets one commit either way."""
    from tests.reliability.fault_proxy import FaultProxy

    hub.store.create_repo(REPO)
    first = _head(hub)
    hub.store.commit(REPO, {"stale.txt": b"to be deleted"})  # so the retry's commit would 412
    before = _head(hub)
    assert before != first
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with FaultProxy(hub.url, ["503", "lost"], fault_on=("/commit/",)) as proxy:
        monkeypatch.setenv("HF_ENDPOINT", proxy.url)
        argv = ["-v", "publish", "pong-long", f"hf://datasets/{REPO}", "--root", str(export)]
        assert main(argv) == 0
    assert proxy.injected == {"503": 1, "lost": 1}
    assert "an earlier try's commit" in capsys.readouterr().err  # the retry met its own commit
    head = _head(hub)
    assert hub.store.commit_record("dataset", REPO, head)["parent"] == before  # one commit
    tree = hub.store.tree("dataset", REPO, head)
    assert "stale.txt" not in tree and "meta/info.json" in tree
    assert hub.store.settings("dataset", REPO)["tags"]["v3.0"] == head


def test_a_publish_from_a_bucket_root_on_another_machine_checks_the_export_out(
    hub, gcs_endpoint, tmp_path, monkeypatch, capsys
):
    """The export lives in a gs:// root; a machine whose local copy is empty publishes it: the
    published export is pulled first, and the hub gets exactly its files."""
    from episode_warehouse.gcs import gcs_client

    gcs_client(gcs_endpoint).create_bucket("publish-from-bucket")
    url = "gs://publish-from-bucket/wh"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "first-machine"))
    layout = WarehouseLayout.from_root(url)
    _export_pong_long(layout, url)
    exported = _files(layout.lerobot_dir("pong-long"))

    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "second-machine"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert not WarehouseLayout.from_root(url).lerobot_dir("pong-long").exists()
    assert main(["publish", "pong-long", "hf://datasets/me/from-bucket", "--root", url]) == 0
    assert "hf://datasets/me/from-bucket@" in capsys.readouterr().out
    tree = hub.store.tree("dataset", "me/from-bucket", _head(hub, "me/from-bucket"))
    assert sorted(tree) == sorted([*exported, ".gitattributes", "README.md"])
    for path, data in exported.items():
        stored = hub.store.object_path("dataset", "me/from-bucket", tree[path]["sha256"])
        assert stored.read_bytes() == data, path


def test_a_tag_move_that_fails_says_the_tag_is_missing_and_a_rerun_repairs_it(
    hub, export, monkeypatch, capsys
):
    """#42: the hub has no tag move; when the create after the delete keeps failing the repo is
    left without v3.0, and the publish must say so (and the rerun put it back)."""
    from tests.reliability.fault_proxy import FaultProxy

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    argv = ["publish", "pong-long", f"hf://datasets/{REPO}", "--root", str(export)]
    assert main(argv) == 0
    hub.store.commit(REPO, {"someone-else.txt": b"moves main past v3.0"})
    capsys.readouterr()
    with FaultProxy(hub.url, [None] + ["503"] * 40, fault_on=("/tag/",)) as proxy:
        monkeypatch.setenv("HF_ENDPOINT", proxy.url)
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the v3.0 tag was deleted" in err and "has no v3.0 tag now" in err
    assert "run the same publish again" in err
    assert "v3.0" not in hub.store.settings("dataset", REPO)["tags"]
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    uploads = len(hub.requests)
    assert main(argv) == 0
    assert hub.store.settings("dataset", REPO)["tags"]["v3.0"] == _head(hub)
    assert not [r for r in hub.requests[uploads:] if r[0] in ("PUT",) or "/commit/" in r[1]]
