"""A root does the work itself (#49): a folder and a bucket answer the same calls with the same
values, and a root opened for reading writes nothing on this machine but its reader cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from episode_warehouse.catalog import run_query
from episode_warehouse.errors import ConcurrentWriteError, ReadOnlyRootError
from episode_warehouse.loading import EpisodeStream, select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage import parse_root
from episode_warehouse.ted.open import open_ted
from episode_warehouse.ted.reader import TedReader
from episode_warehouse.viewer.partition import PartitionTed
from tests.bucket.conftest import layout_of
from tests.helpers import build_atari

ALL = "SELECT source, partition, episode, start, length FROM episodes ORDER BY episode"


@pytest.fixture
def two_roots(bucket_url, tmp_path):
    """The same partition built into a bucket root and into a folder root."""
    local = WarehouseLayout.local(tmp_path / "local-wh")
    for layout in (layout_of(bucket_url), local):
        build_atari(layout, "Pong/1", 1, capacity=100, episodes=6, lengths=(20, 60))
    return parse_root(bucket_url), parse_root(local.folder)


def test_a_folder_and_a_bucket_answer_alike(two_roots):
    bucket, folder = two_roots
    for root in (bucket, folder):
        assert not root.writer
        assert set(root.published("ted/atari", 2)) == {"ted/atari/Pong/1"}
        assert root.has_any(["ted"]) and not root.has_any(["standardized"])
    a, b = (TedReader.of(r, "atari", "Pong/1") for r in two_roots)
    assert a.meta.version == b.meta.version  # the same inputs give the same version
    assert a.episodes().equals(b.episodes())
    start, length = (int(x) for x in (a.episodes()["start"][2], a.episodes()["length"][2]))
    rows_a, rows_b = a.read(start, length), b.read(start, length)
    for key in rows_b.keys(True, True):
        assert torch.equal(rows_a.get(key)[:], rows_b.get(key)[:]), key
    assert b.bytes_fetched == 0 and a.bytes_fetched > 0  # mapped here, ranges from the bucket
    frames = a.meta.keys["observation"]["file"]
    picked = np.array([start + 3, start, start + 1, start + 3])
    np.testing.assert_array_equal(a.file_rows(frames)[picked], b.file_rows(frames)[picked])
    counts = [run_query(r, "SELECT count(*) FROM episodes")[1] for r in (bucket, folder)]
    assert counts[0] == counts[1] == [(a.meta.episodes,)]


def test_reading_a_bucket_root_writes_nothing_here(two_roots, bucket_url, tmp_path, monkeypatch):
    """Opening gs:// to read bound the writer's local copy (a folder and .bucket-root.json):
    every reader now leaves the local copy's place empty."""
    elsewhere = tmp_path / "another-machine"
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(elsewhere / "copy"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(elsewhere / "cache"))
    root = parse_root(bucket_url)
    with pytest.raises(ReadOnlyRootError):
        root.folder  # noqa: B018
    selection = select_episodes(ALL, root=bucket_url)
    items = [r.read() for r in EpisodeStream(selection, slice_len=8, seed=0, drop_last=True)]
    assert items and all(len(item["step"]) == 8 for item in items)
    viewer = PartitionTed(root, "atari", "Pong/1")
    assert len(viewer.rows(1)) == viewer.span(1).length
    assert (
        len(open_ted("atari", "Pong/1", root=bucket_url))
        == TedReader.of(root, "atari", "Pong/1").rows
    )
    assert not (elsewhere / "copy").exists()  # the cache holds what open_ted fetched, only
    assert [p.name for p in elsewhere.iterdir()] == ["cache"]
    with pytest.raises(ReadOnlyRootError):
        root.artifact("ted/atari/Pong/1").delete()
    with pytest.raises(ReadOnlyRootError):
        root.write_text("selections/x.sql", "SELECT 1", expected=None)


def test_documents_are_replaced_only_from_what_was_read(bucket_url, tmp_path):
    """Selections and mappings live in the root (a bucket's are objects), replaced with a
    precondition: a writer that read an older text is refused."""
    for root in (layout_of(bucket_url).root, WarehouseLayout.local(tmp_path / "wh").root):
        rel = "selections/mine.sql"
        assert root.read_text(rel) is None
        root.write_text(rel, "SELECT 1", expected=None)
        assert root.read_text(rel) == "SELECT 1" and parse_root(root).read_text(rel) == "SELECT 1"
        with pytest.raises(ConcurrentWriteError):
            root.write_text(rel, "SELECT 2", expected=None)
        root.write_text(rel, None, expected="SELECT 1")
        assert root.read_text(rel) is None


def test_a_planted_document_is_refused_by_its_size_before_it_is_read(bucket_url, tmp_path):
    """Anyone who can write a root can plant a document: one over the bound is refused by its
    declared size (the listing's, the file's), naming it, before a byte of it is read."""
    from episode_warehouse.errors import LimitExceededError
    from episode_warehouse.storage.base import MAX_DOCUMENT_BYTES

    big = "x" * (MAX_DOCUMENT_BYTES + 1)
    for root in (layout_of(bucket_url).root, WarehouseLayout.local(tmp_path / "wh").root):
        root.write_text("config/standardized_mappings.json", big, expected=None)
        with pytest.raises(LimitExceededError, match="over the") as err:
            parse_root(root).read_text("config/standardized_mappings.json")
        assert "standardized_mappings.json" in str(err.value)
