"""Training nodes streaming a SQL selection from a bucket root: byte ranges, read-ahead, faults."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from episode_warehouse.catalog import CatalogStore, run_query
from episode_warehouse.errors import CatalogQueryError
from episode_warehouse.incremental import published
from episode_warehouse.loading import (
    EpisodeSliceDataset,
    EpisodeStream,
    Selection,
    StepWindowDataset,
    no_collate,
    select_episodes,
)
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage import parse_root
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.ted import ranges as ted_ranges
from episode_warehouse.ted.open import open_ted_folder
from episode_warehouse.ted.reader import TedReader
from tests.bucket.conftest import layout_of, root_of, scratch_of
from tests.helpers import build_atari
from tests.reliability.fault_proxy import FaultProxy

ALL = "SELECT source, partition, episode, start, length FROM episodes ORDER BY partition, episode"


def read(ref):
    """A stream item read alone."""
    return ref.read()


def _expected(ted, start: int, length: int) -> dict:
    return {k: ted[start : start + length].get(k).numpy() for k in ted.keys(True, True)}


@pytest.mark.slow  # ~50 s: a 9,000-step partition and a fresh interpreter
def test_a_fresh_node_fetches_only_the_selected_episodes(bucket_url, gcs_endpoint, tmp_path):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/9", 9, capacity=2000, episodes=70, lengths=(120, 181))
    ted_dir = scratch / "ted/atari/Pong/9"
    record = published(root_of(bucket_url), ted_dir).to_json()
    assert 8_000 <= record["rows"] <= 10_000
    ted_bytes = sum(int(f["size"]) for f in record["published"]["files"].values())
    spec = tmp_path / "spec.json"
    sql = (
        "SELECT source, partition, episode, start, length FROM episodes "
        "WHERE partition = 'Pong/9' AND episode IN (7, 31) ORDER BY episode"
    )
    spec.write_text(json.dumps({"sql": sql, "out": str(tmp_path / "got.npz"),
                                "report": str(tmp_path / "report.json")}))  # fmt: skip
    with FaultProxy(gcs_endpoint, []) as proxy:
        env = {**os.environ, "STORAGE_EMULATOR_HOST": proxy.url,
               "EPISODE_WAREHOUSE_LOCAL_COPY": str(tmp_path / "node-scratch"),
               "EPISODE_WAREHOUSE_CACHE": str(tmp_path / "node-cache")}  # fmt: skip
        subprocess.run([sys.executable, "-m", "tests.bucket.stream_node", str(spec)], env=env,
                       check=True, timeout=300)  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    got = np.load(tmp_path / "got.npz")
    ted = open_ted_folder(ted_dir)
    rows = report["rows"]
    assert [r[2] for r in rows] == [7, 31]
    want = [_expected(ted, start, length) for _, _, _, start, length in rows]
    for key in want[0]:
        name = "/".join(key) if isinstance(key, tuple) else key
        np.testing.assert_array_equal(got[name], np.concatenate([w[key] for w in want]), name)
    steps = sum(r[4] for r in rows)
    fetched = sum(n for name, n in proxy.media_bytes.items() if "/ted/" in name)  # records too
    data = sum(n for name, n in proxy.media_bytes.items() if "/ted/" in name and "/.v/" in name)
    index = int(record["published"]["files"]["episodes.parquet"]["size"])  # the selection's check
    assert data == report["bytes_fetched"] + index  # the proxy saw what the stream counted
    assert fetched < ted_bytes / 4, (fetched, ted_bytes)
    # the rows it needs: the episodes' frames (and the next one), the camera's offsets once,
    # the small files' one block each (the whole file: under 16,384 rows), a header each
    files = record["published"]["files"]
    offsets = np.load(ted_dir / "observation.offsets.npy")
    frames = sum(int(offsets[s + n + 1] - offsets[s]) for *_, s, n in rows)
    small = sum(int(f["size"]) for name, f in files.items()
                if name.endswith(".npy") and name != "observation.offsets.npy")  # fmt: skip
    once = int(files["observation.offsets.npy"]["size"]) + 4096 * len(files)
    per_file = {n.rsplit("/", 1)[-1]: b for n, b in proxy.media_bytes.items() if "/ted/" in n}
    assert fetched < frames + small + once + 65536, (fetched, frames, small, once, str(per_file))
    assert steps < 0.05 * record["rows"]  # what the bound is about: a small part of the TED
    assert not (tmp_path / "node-cache").exists() or not any(
        p.is_file() for p in (tmp_path / "node-cache").rglob("*")
    )


def test_503s_resets_and_cut_bodies_are_retried_without_losing_or_repeating(
    bucket_url, gcs_endpoint, monkeypatch
):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    build_atari(layout_of(bucket_url), "Pong/2", 2)
    selection = select_episodes(ALL)
    teds = {p: open_ted_folder(scratch / "ted/atari" / p) for p in ("Pong/1", "Pong/2")}
    faults = ["503", "reset", None, "truncate", "503", None, None, "reset"] * 3
    # one fetch thread: requests meet the schedule in order (never more than 3 faults in a row,
    # under the 6 attempts of the retry policy); several threads could give one request more
    monkeypatch.setattr(ted_ranges, "TRANSFER_THREADS", 1)
    with FaultProxy(gcs_endpoint, faults) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        stream = EpisodeStream(selection, slice_len=16, seed=3, rank=0, world_size=1)
        seen: dict[int, int] = {}
        for item in map(read, stream):
            i = int(item["selection_index"][0])
            offset, length = int(item["step"][0]), len(item["step"])
            assert seen.get(i, 0) == offset  # slices of an episode in order, none repeated
            seen[i] = offset + length
            want = _expected(teds[selection.partition[i]], int(selection.start[i]) + offset, length)
            for key, value in want.items():
                np.testing.assert_array_equal(item.get(key).numpy(), value, str(key))
    assert seen == {i: int(n) for i, n in enumerate(selection.length)}  # every step, once
    assert proxy.injected["503"] >= 5 and proxy.injected["reset"] >= 3
    assert proxy.injected["truncate"] >= 2


def test_ranks_and_workers_share_a_bucket_selection_exactly_once(bucket_url):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    selection = select_episodes(ALL)
    delivered = []
    for rank in range(2):
        stream = EpisodeStream(selection, seed=5, rank=rank, world_size=2)
        loader = torch.utils.data.DataLoader(
            stream, batch_size=None, num_workers=2, collate_fn=no_collate
        )
        delivered += [int(item["selection_index"][0]) for item in loader]
    assert sorted(delivered) == list(range(len(selection)))
    # the map-style dataset over the bucket reads the same slices as over the scratch TED
    ted = open_ted_folder(scratch / "ted/atari/Pong/1")
    dataset = EpisodeSliceDataset(selection, 10)
    for k in (0, len(dataset) // 2, len(dataset) - 1):
        item = dataset[k]
        i, offset = int(item["selection_index"][0]), int(item["step"][0])
        want = _expected(ted, int(selection.start[i]) + offset, 10)
        for key, value in want.items():
            np.testing.assert_array_equal(item.get(key).numpy(), value, str(key))


def test_step_windows_over_a_bucket_selection_equal_a_local_copy(bucket_url, tmp_path):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    selection = select_episodes(ALL)
    local = tmp_path / "local-copy"
    shutil.copytree(scratch / "ted", local / "ted", ignore=shutil.ignore_patterns(".*"))
    deltas = {"observation": [-3, 0], "action": [0, 1, 2], ("next", "reward"): [0]}
    ours = StepWindowDataset(selection, deltas)  # downloads the TED into the cache once
    theirs = StepWindowDataset(Selection.from_rows(selection.rows(), local), deltas)
    picks = [0, 17, len(ours) // 2, len(ours) - 1]
    got, want = ours.__getitems__(picks), theirs.__getitems__(picks)
    for key in want.keys(True, True):
        np.testing.assert_array_equal(got.get(key).numpy(), want.get(key).numpy(), str(key))
    assert list((tmp_path / "cache").rglob("observation.frames"))


def test_catalog_queries_over_the_bucket_equal_the_scratch_catalog(bucket_url):
    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    build_atari(layout_of(bucket_url), "Pong/2", 2)
    layout = WarehouseLayout.from_root(bucket_url)
    sql = "SELECT * EXCLUDE (materialized_at) FROM episodes ORDER BY partition, episode"
    over_bucket = run_query(layout.root, sql)
    local = WarehouseLayout.local(scratch.parent / "copy")
    shutil.copytree(scratch / "catalog", local.catalog_dir, ignore=shutil.ignore_patterns(".*"))
    CatalogStore(local.root).ensure_database(rebuild=True)
    assert over_bucket == run_query(local.root, sql)
    assert len(over_bucket[1]) == sum(
        TedReader.of(parse_root(bucket_url), "atari", p).meta.episodes for p in ("Pong/1", "Pong/2")
    )
    with pytest.raises(CatalogQueryError, match="queries may read only the catalog"):
        run_query(layout.root, f"SELECT * FROM read_parquet('{bucket_url}/ted/x.parquet')")


def _republish(bucket_url: str, tmp_path, seed: int) -> dict:
    """Publish another build of Pong/1's TED over the bucket's, as a later run would."""
    from episode_warehouse.storage.bucket.artifact import RemoteArtifact

    local = tmp_path / f"local-{seed}"
    build_atari(local, "Pong/1", seed)
    artifact = RemoteArtifact(Bucket.parse(bucket_url), "ted/atari/Pong/1")
    previous, generation = artifact.read()
    return artifact.push(local / "ted/atari/Pong/1", previous, generation)


def _episode_starts(ted) -> dict[int, int]:
    ids = ted["episode"].numpy()
    return {int(e): int(np.flatnonzero(ids == e)[0]) for e in np.unique(ids)}


def test_a_stream_finishes_its_epoch_on_the_version_it_started_with(bucket_url, tmp_path):
    """Republished mid-epoch, the partition's old objects stay readable (retired for RETAIN_S):
    the epoch delivers the old rows to its end, every slice checked (#69 item 2). The next
    epoch refuses the rebuilt partition (its rows were offsets into the old version), or, with
    ``on_rebuild="refresh"``, reads each row's steps of the same episode in the new version,
    every slice checked against the new version's rows."""
    from episode_warehouse.errors import StaleSelectionError

    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    old = open_ted_folder(scratch / "ted/atari/Pong/1")
    selection = select_episodes(ALL)
    heads = select_episodes(  # ten steps from the third of each episode
        "SELECT source, partition, episode, start + 2 AS start, 10 AS length FROM episodes "
        "ORDER BY episode", on_rebuild="refresh",
    )  # fmt: skip
    stream = EpisodeStream(selection, slice_len=16, seed=3, rank=0, world_size=1)
    refreshing = EpisodeStream(heads, slice_len=5, seed=3, rank=0, world_size=1)
    items = map(read, stream)
    total = len(stream.shard_items())
    delivered = 0
    for item in items:
        i, offset = int(item["selection_index"][0]), int(item["step"][0])
        want = _expected(old, int(selection.start[i]) + offset, len(item["step"]))
        for key, value in want.items():
            np.testing.assert_array_equal(item.get(key).numpy(), value, str(key))
        delivered += 1
        if delivered == 3:
            list(refreshing)  # its first epoch, on the old version
            newest = _republish(bucket_url, tmp_path, 7)
    assert delivered == total
    new = open_ted_folder(tmp_path / "local-7/ted/atari/Pong/1")
    assert _episode_starts(new) != _episode_starts(old)
    with pytest.raises(StaleSelectionError, match="atari:Pong/1 was rebuilt since"):
        next(iter(stream))  # the next epoch
    checked = 0
    old_starts, new_starts = _episode_starts(old), _episode_starts(new)
    for item in map(read, refreshing):  # its next epoch: re-resolved in the new version
        i, offset = int(item["selection_index"][0]), int(item["step"][0])
        episode = int(heads.episode[i])
        start = new_starts[episode] + int(heads.start[i]) - old_starts[episode] + offset
        for key, value in _expected(new, start, len(item["step"])).items():
            np.testing.assert_array_equal(item.get(key).numpy(), value, str(key))
        checked += 1
    assert checked == len(heads) * 2
    remote = refreshing.cache.reader("atari", "Pong/1")
    assert remote.record["published"]["token"] == newest["published"]["token"]


def test_a_version_removed_under_a_stream_is_a_clear_error(bucket_url, tmp_path, monkeypatch):
    from episode_warehouse.errors import StaleSelectionError
    from episode_warehouse.storage.bucket import artifact as artifact_module

    build_atari(layout_of(bucket_url), "Pong/1", 1)
    selection = select_episodes(ALL)
    stream = EpisodeStream(selection, slice_len=16, seed=3, rank=0, world_size=1)
    items = iter(stream)
    next(items)
    monkeypatch.setattr(artifact_module, "RETAIN_S", 0.0)
    _republish(bucket_url, tmp_path, 7)
    _republish(bucket_url, tmp_path, 8)  # deletes the retired first version
    with pytest.raises(StaleSelectionError, match="start a new epoch") as err:
        for _ in items:
            pass
    assert "ted/atari/Pong/1" in str(err.value)


def test_a_bucket_streams_batches_read_at_once_equal_to_the_local_ted(bucket_url):
    """#72: a stream over a bucket root reads each batch at once, as from a folder: its slices'
    episodes (fetched ahead, carried by the items) joined and gathered, every frame decoded
    once into the batch. Each item equals the downloaded TED's rows (next observations at
    episode ends included), batches spanning several episodes."""
    from episode_warehouse.loading import ted_collate
    from episode_warehouse.loading.batch_read import read_batch

    scratch = scratch_of(bucket_url)
    build_atari(layout_of(bucket_url), "Pong/1", 1)
    selection = select_episodes(ALL)
    ted = open_ted_folder(scratch / "ted/atari/Pong/1")
    refs = list(EpisodeStream(selection, 8, shuffle=False, drop_last=True))
    assert refs and all(r.data is not None for r in refs)  # fetched ahead, nothing decoded
    spans = 0
    for first in range(0, len(refs), 16):
        batch_refs = refs[first : first + 16]
        assert read_batch(batch_refs) is not None  # read at once, not slice by slice
        got = ted_collate(batch_refs)
        spans += len({r.row for r in batch_refs}) > 1
        for k, ref in enumerate(batch_refs):
            want = _expected(ted, int(selection.start[ref.row]) + ref.offset, 8)
            for key, value in want.items():
                np.testing.assert_array_equal(got[k].get(key).numpy(), value, str(key))
            assert int(got[k]["selection_index"][0]) == ref.row
            assert got[k]["step"].tolist() == list(range(ref.offset, ref.offset + 8))
    assert spans >= 2
    ends = [r for r in refs if r.offset + 8 == int(selection.length[r.row])]
    assert ends  # slices that end an episode: their last next observation is its final one
