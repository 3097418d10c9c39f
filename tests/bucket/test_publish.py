"""Publishing to a bucket root: meta-last, generation preconditions, killed and racing writers.

Everything runs against the real GCS JSON API (gcp-storage-emulator, with GCS's precondition
semantics: warehouse_fixtures.gcs_emulator.enforce_generations).
"""

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.errors import ConcurrentWriteError
from episode_warehouse.incremental import build_if_changed, published
from episode_warehouse.storage.bucket import artifact as artifact_module
from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.storage.bucket.bucket_root import BucketRoot, bind
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.ted.open import open_ted_folder
from tests.bucket.conftest import layout_of, root_of, scratch_of
from tests.helpers import build_atari
from tests.reliability.fault_proxy import FaultProxy

TED = "ted/atari/Pong/1"


def _arrays(td) -> dict:
    return {k: td.get(k)[:].numpy() for k in td.keys(True, True)}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _local_ted(tmp_path: Path, seed: int) -> Path:
    """A TED of Pong/1 built with ``seed`` under a local root (a version to publish)."""
    root = tmp_path / f"local-{seed}"
    build_atari(root, "Pong/1", seed)
    return root / TED


def _objects(url: str, under: str) -> list[str]:
    root = Bucket.parse(url)
    return sorted(i.name for i in root.store().list(under))


def test_the_bucket_holds_the_ted_the_scratch_built_and_a_new_machine_skips_it(
    bucket_url, tmp_path, monkeypatch
):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    record = published(root_of(bucket_url), scratch / TED).to_json()
    files = record[PUBLISHED]["files"]
    local = sorted(
        p.relative_to(scratch / TED).as_posix()
        for p in (scratch / TED).rglob("*")
        if p.is_file() and p.name != "meta.json"
    )
    assert sorted(files) == local and {"observation.frames", "observation.offsets.npy"} <= set(
        files
    )
    artifact = RemoteArtifact(Bucket.parse(bucket_url), TED)
    for name in local:  # byte for byte, at the listed generation
        blob = artifact.blob(record, name)
        assert (
            artifact.store.read_bytes(blob.name, blob.generation)
            == (scratch / TED / name).read_bytes()
        )
    assert not Path("gs:").exists()

    # another machine (an empty scratch folder): same inputs, nothing rebuilt or re-uploaded
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "other-machine"))
    other = scratch_of(bucket_url)
    built = build_if_changed(
        root_of(bucket_url), other / TED, record["inputs"], lambda tmp: pytest.fail("rebuilt")
    )
    assert not built.rebuilt and built.version == record["version"]
    assert _same(_arrays(open_ted("atari", "Pong/1")), _arrays(open_ted_folder(scratch / TED)))


PUSH = """
import json, sys
from pathlib import Path
from episode_warehouse.storage.bucket.artifact import RemoteArtifact
from episode_warehouse.storage.bucket.objects import Bucket
spec = json.loads(sys.argv[1])
artifact = RemoteArtifact(Bucket.parse(spec["url"]), spec["rel"])
previous, generation = artifact.read()
artifact.push(Path(spec["folder"]), previous, generation)
"""


def test_a_publisher_killed_between_files_leaves_the_previous_version(
    bucket_url, gcs_endpoint, tmp_path, monkeypatch
):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    before = _arrays(open_ted_folder(scratch / TED))
    record = published(root_of(bucket_url), scratch / TED).to_json()
    new = _local_ted(tmp_path, 2)
    spec = json.dumps({"url": bucket_url, "rel": TED, "folder": str(new)})
    with FaultProxy(gcs_endpoint, [], hold_uploads_after=3) as proxy:
        env = {**__import__("os").environ, "STORAGE_EMULATOR_HOST": proxy.url}
        child = subprocess.Popen([sys.executable, "-c", PUSH, spec], env=env)
        deadline = time.monotonic() + 120
        while proxy.uploads <= 3 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.poll() is None, "the publisher ended before it was killed"
        child.kill()  # SIGKILL: between its third and fourth file
        child.wait()
    after = published(root_of(bucket_url), scratch / TED).to_json()
    assert after == record  # the record was never replaced
    debris = [n for n in _objects(bucket_url, f"{TED}/.v/") if record[PUBLISHED]["prefix"] not in n]
    assert len(debris) == 3  # the killed writer's objects: listed by no record
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "fresh-cache"))
    assert _same(_arrays(open_ted("atari", "Pong/1")), before)

    # the next writer publishes, keeps the previous version for its readers (retired, for
    # RETAIN_S), and sweeps old debris
    monkeypatch.setattr(artifact_module, "DEBRIS_AGE_S", 0.0)
    artifact = RemoteArtifact(Bucket.parse(bucket_url), TED)
    previous, generation = artifact.read()
    newest = artifact.push(new, previous, generation)
    (retired,) = newest[artifact_module.RETIRED]
    assert retired["prefix"] == record[PUBLISHED]["prefix"]

    def listed(*sections: dict) -> list[str]:
        return sorted(f"{TED}/{s['prefix']}/{f}" for s in sections for f in s["files"])

    assert _objects(bucket_url, f"{TED}/.v/") == listed(newest[PUBLISHED], retired)
    # a retired version past RETAIN_S is deleted by the next publish
    monkeypatch.setattr(artifact_module, "RETAIN_S", 0.0)
    again = _local_ted(tmp_path, 3)
    previous, generation = artifact.read()
    third = artifact.push(again, previous, generation)
    (kept,) = third[artifact_module.RETIRED]  # the one just replaced; the expired one is gone
    assert kept["prefix"] == newest[PUBLISHED]["prefix"]
    assert _objects(bucket_url, f"{TED}/.v/") == listed(third[PUBLISHED], kept)
    new = again
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache-after"))
    assert _same(_arrays(open_ted("atari", "Pong/1")), _arrays(open_ted_folder(new)))


def test_two_machines_publishing_at_once_one_wins_the_other_fails_clearly(bucket_url, tmp_path):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    root = Bucket.parse(bucket_url)
    versions = {"a": _local_ted(tmp_path, 2), "b": _local_ted(tmp_path, 3)}
    both_read = threading.Barrier(2, timeout=60)
    outcome: dict[str, object] = {}

    def machine(name: str) -> None:
        folder = tmp_path / f"machine-{name}"
        bind(folder, root)  # its own scratch folder, as on another machine

        def build(tmp: Path) -> dict:
            both_read.wait()  # both have read the same record before either publishes
            shutil.copytree(versions[name], tmp, dirs_exist_ok=True)
            (tmp / "meta.json").unlink()
            return json.loads((versions[name] / "meta.json").read_text())

        try:
            outcome[name] = build_if_changed(
                BucketRoot(root, folder), folder / TED, {"seed": name}, build
            )
        except ConcurrentWriteError as exc:
            outcome[name] = exc

    threads = [threading.Thread(target=machine, args=(n,)) for n in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = {n: o for n, o in outcome.items() if isinstance(o, ConcurrentWriteError)}
    assert len(errors) == 1, outcome
    ((loser, error),) = errors.items()
    winner = "b" if loser == "a" else "a"
    assert "another writer published this artifact first" in str(error)
    assert TED in str(error) and "withdrawn" in str(error)
    record = published(root_of(bucket_url), scratch / TED).to_json()
    assert record["inputs"] == {"seed": winner}
    # every object left is the winner's or the version it replaced (retired, kept for its
    # readers); none is the loser's; the reader gets the winner's TED, whole
    sections = [record[PUBLISHED], *record[artifact_module.RETIRED]]
    assert _objects(bucket_url, f"{TED}/.v/") == sorted(
        f"{TED}/{s['prefix']}/{f}" for s in sections for f in s["files"]
    )
    assert _same(_arrays(open_ted("atari", "Pong/1")), _arrays(open_ted_folder(versions[winner])))
