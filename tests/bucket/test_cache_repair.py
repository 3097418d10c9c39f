"""The trainer's TED cache serves what the bucket's record lists, not what happens to be on
disk: a changed file is re-verified at open, and repaired from the bucket when it differs."""

from pathlib import Path

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.records import RECORD
from episode_warehouse.storage import parse_root
from episode_warehouse.storage.bucket.artifact import VERIFIED
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.ted.open import open_ted_folder
from episode_warehouse.ted.reader import TedReader
from tests.bucket.conftest import layout_of, scratch_of
from tests.helpers import build_atari


def cached_ted(root: Bucket, source: str, partition: str) -> Path:
    """The reader cache's folder of the partition's current TED (fetched if it is not there)."""
    return TedReader.of(parse_root(root.url), source, partition).folder()


def _arrays(td) -> dict:
    return {k: td.get(k)[:].numpy().copy() for k in td.keys(True, True)}


@pytest.fixture
def cached(bucket_url):
    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    root = Bucket.parse(bucket_url)
    folder = cached_ted(root, "atari", "Pong/1")
    return root, folder, _arrays(open_ted_folder(scratch_of(bucket_url) / "ted/atari/Pong/1"))


def _observation_file(folder):
    files = [p for p in folder.rglob("observation*") if p.is_file()]
    return max(files, key=lambda p: p.stat().st_size)


def test_flipped_bytes_in_a_cached_file_are_repaired_not_served(cached):
    root, folder, truth = cached
    path = _observation_file(folder)
    data = bytearray(path.read_bytes())
    data[-100:] = bytes(255 - b for b in data[-100:])  # same size, other bytes
    path.write_bytes(bytes(data))
    assert cached_ted(root, "atari", "Pong/1") == folder
    got = _arrays(open_ted("atari", "Pong/1"))
    assert got.keys() == truth.keys() and all(np.array_equal(got[k], truth[k]) for k in truth)


def test_a_truncated_cached_file_is_fetched_again_on_the_next_open(cached):
    root, folder, truth = cached
    path = _observation_file(folder)
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)
    got = _arrays(open_ted("atari", "Pong/1"))
    assert all(np.array_equal(got[k], truth[k]) for k in truth)
    assert (folder / RECORD).is_file() and (folder / VERIFIED).is_file()


def test_planted_files_in_an_unfinished_cache_folder_are_verified_before_use(cached):
    root, folder, truth = cached
    (folder / RECORD).unlink()  # as if a download had been interrupted
    path = _observation_file(folder)
    path.write_bytes(b"\0" * path.stat().st_size)  # right size, wrong bytes
    (folder / VERIFIED).unlink()
    got = _arrays(open_ted("atari", "Pong/1"))
    assert all(np.array_equal(got[k], truth[k]) for k in truth)


def test_an_unchanged_cache_is_opened_from_stats_alone(cached, monkeypatch):
    root, folder, _ = cached
    from episode_warehouse.storage.bucket import artifact

    monkeypatch.setattr(artifact, "file_crc32c", lambda p: pytest.fail(f"re-hashed {p}"))
    assert cached_ted(root, "atari", "Pong/1") == folder
    record = open_ted("atari", "Pong/1")
    assert len(record["episode"]) > 0


def test_a_missing_object_of_the_current_version_fails_at_once(bucket_url, tmp_path, monkeypatch):
    """The cache fetches the current version again only when the partition was republished;
    an object missing from the version the record still names is terminal, not retried."""
    from episode_warehouse.errors import SourceMissingError
    from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact

    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    root = Bucket.parse(bucket_url)
    artifact = RemoteArtifact(root, "ted/atari/Pong/1")
    record, _ = artifact.read()
    (lost,) = [f for f in record[PUBLISHED]["files"] if f.endswith("action.npy")]
    info = artifact.blob(record, lost)
    artifact.store.delete(info.name, info.generation)
    downloads = []
    real = RemoteArtifact.download

    def counted(self, *args, **kwargs):
        downloads.append(self.rel)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RemoteArtifact, "download", counted)
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SourceMissingError):
        cached_ted(Bucket.parse(bucket_url), "atari", "Pong/1")
    assert downloads == ["ted/atari/Pong/1"]  # one download, no retries of a terminal error


def test_flipped_bytes_with_their_mtime_put_back_are_caught_on_a_processs_first_open(cached):
    """#42: size and mtime alone let such a file through; the first open in a process hashes."""
    import os

    from episode_warehouse.storage.bucket import cache as remote_cache

    root, folder, truth = cached
    path = _observation_file(folder)
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-100:] = bytes(255 - b for b in data[-100:])
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    remote_cache._HASHED.clear()  # as a new process starts
    assert cached_ted(root, "atari", "Pong/1") == folder
    got = _arrays(open_ted("atari", "Pong/1"))
    assert all(np.array_equal(got[k], truth[k]) for k in truth)


def test_a_symlinked_cache_folder_is_neither_written_nor_deleted_through(
    bucket_url, tmp_path, monkeypatch
):
    """#42: the cache was a link to another folder, whose contents open_ted replaced."""
    from episode_warehouse.errors import ConfigError

    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "data.txt").write_text("mine\n")
    link = tmp_path / "linked-cache"
    link.symlink_to(victim)
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(link))
    with pytest.raises(
        ConfigError, match="EPISODE_WAREHOUSE_CACHE: .*linked-cache is a symbolic link"
    ):
        open_ted("atari", "Pong/1")
    assert sorted(p.relative_to(victim) for p in victim.rglob("*")) == [
        Path("keep"),
        Path("keep/data.txt"),
    ]
