"""Names written into a bucket by someone else never make the warehouse write or delete outside
its folders: record entries, version tokens and object names with ``..`` are refused.

The emulator keeps object names literally, as GCS does (``keep_names_literally``): the stock
gcp-storage-emulator refuses ``..``, which would hide what a real bucket can hold.
"""

import json
from pathlib import Path

import pytest

from episode_warehouse import open_ted
from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import ConfigError, CorruptInputError
from episode_warehouse.gcs import gcs_client
from episode_warehouse.guards.names import checked_name, inside
from episode_warehouse.incremental import checkout
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.lerobot.mirror import mirror_dataset
from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.storage.bucket.objects import Bucket
from tests.bucket.conftest import layout_of, root_of, scratch_of
from tests.helpers import build_atari

TED = "ted/atari/Pong/1"


def _tamper(url: str, rel: str, change) -> dict:
    """Replace the bucket record of ``rel`` by ``change(record)``, as a hostile writer would."""
    artifact = RemoteArtifact(Bucket.parse(url), rel)
    info = artifact.store.stat(f"{rel}/meta.json")
    record = json.loads(artifact.store.read_bytes(info.name, info.generation))
    change(record)
    artifact.store.upload(f"{rel}/meta.json", data=json.dumps(record).encode())
    return record


def _files_under(folder: Path) -> set[str]:
    return (
        {p.relative_to(folder).as_posix() for p in folder.rglob("*")} if folder.exists() else set()
    )


@pytest.mark.parametrize(
    "entry", ["../../../../escaped.txt", "ABSOLUTE", "a\\..\\..\\x", "ok/\x00x"]
)
def test_a_record_entry_that_leaves_the_folder_is_refused_on_trainer_and_worker(
    bucket_url, tmp_path, monkeypatch, entry
):
    absolute = tmp_path / "abs-escaped.txt"
    entry = str(absolute) if entry == "ABSOLUTE" else entry
    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)

    def add_entry(record):
        section = record[PUBLISHED]
        payload = f"{TED}/{section['prefix']}/{entry}"
        info = Bucket.parse(bucket_url).store().upload(payload, data=b"planted")
        section["files"][entry] = info.to_json()

    _tamper(bucket_url, TED, add_entry)
    before = _files_under(tmp_path)
    with pytest.raises(CorruptInputError, match="record entry") as err:
        open_ted("atari", "Pong/1")  # a trainer: downloads into the cache
    assert entry.replace("\x00", "\\x00") in str(err.value) or repr(entry) in str(err.value)

    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "worker"))
    with pytest.raises(CorruptInputError, match="record entry"):
        checkout(
            root_of(bucket_url), scratch_of(bucket_url) / TED
        )  # a worker: pulls into its scratch copy
    new = _files_under(tmp_path) - before
    assert not [p for p in new if "escaped" in p or p.endswith("/x")], new
    assert not absolute.exists()


@pytest.mark.parametrize("token", ["..", "../Pong", ".", "a/b"])
def test_a_version_token_with_dot_dot_deletes_no_sibling(bucket_url, tmp_path, token):
    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    build_atari(layout_of(bucket_url), "Pong/2", 2, episodes=10)
    sibling = open_ted("atari", "Pong/2")  # cached: a complete folder beside Pong/1's
    cached = Path(Bucket.parse(bucket_url).cache()) / "ted/atari/Pong/2"
    kept = _files_under(cached)
    assert kept and len(sibling["episode"]) > 0

    def bad_token(record):
        record[PUBLISHED]["token"] = token
        record[PUBLISHED]["prefix"] = f".v/{token}"

    _tamper(bucket_url, TED, bad_token)
    with pytest.raises(CorruptInputError, match="version token"):
        open_ted("atari", "Pong/1")
    assert _files_under(cached) == kept  # nothing of Pong/2 deleted


def test_object_names_from_a_gcs_source_stay_inside_the_raw_folder(gcs_endpoint, tmp_path):
    """``LEROBOT_URL=gs://...``: a listed object ``.../data/../../../../x`` is refused before
    any file is written."""
    client = gcs_client(gcs_endpoint)
    bucket = client.create_bucket("hostile-lerobot")
    for name in ("lr/me/ds/meta/info.json", "lr/me/ds/data/../../../../../../escaped"):
        bucket.blob(name).upload_from_string(b"{}")
    assert "lr/me/ds/data/../../../../../../escaped" in [b.name for b in client.list_blobs(bucket)]
    store = open_blob_store("gs://hostile-lerobot/lr", endpoint=gcs_endpoint)
    layout = WarehouseLayout.from_root(tmp_path / "wh")
    with pytest.raises(CorruptInputError, match=r"object name .*\.\./"):
        mirror_dataset(
            store, "me/ds", layout.raw_dir("lerobot", "me/ds"), root=layout.root, code_version="t"
        )
    assert not _files_under(tmp_path / "wh")
    assert not list(tmp_path.rglob("escaped"))


@pytest.mark.parametrize(
    "url", ["gs:/bucket/wh", "gs:bucket", "gs://bucket/../wh", "gs://bucket/a/./b", "gs://Bucket/x"]
)
def test_malformed_gs_urls_are_refused_by_name_not_taken_for_folders(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="gs:") as err:
        WarehouseLayout.from_root(url)
    assert "gs://BUCKET/PREFIX" in str(err.value)
    with pytest.raises(ConfigError):
        open_blob_store(url)
    assert not list(tmp_path.iterdir())  # no ./gs: folder


@pytest.mark.parametrize(
    "name,ok",
    [
        ("data/chunk-000/file-000.parquet", True),
        ("a..b/c.d", True),
        ("..", False),
        ("a/../b", False),
        ("/abs", False),
        ("a//b", False),
        ("a\\b", False),
        ("a\nb", False),
        ("", False),
    ],
)
def test_checked_name(name, ok, tmp_path):
    if ok:
        assert checked_name(name, subject="s") == name
        assert inside(tmp_path, name, subject="s") == tmp_path / name
    else:
        with pytest.raises(CorruptInputError, match="refused"):
            inside(tmp_path, name, subject="s")


def test_inside_refuses_a_planted_link(tmp_path):
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "link").symlink_to(tmp_path)
    with pytest.raises(CorruptInputError, match="outside"):
        inside(tmp_path / "box", "link/secret", subject="s")


@pytest.mark.parametrize("name", ["ABSOLUTE", "../../../secret.npy", "unlisted.npy"])
def test_a_key_file_outside_the_published_files_is_refused(bucket_url, tmp_path, name):
    """A TED record's key naming an absolute path, a name with '..', or a file the record does
    not list as published (#57 item 8): refused when the TED is opened, and the file named is
    never read. Before, an absolute path made open_ted return that file's values."""
    import numpy as np

    secret = tmp_path / "secret.npy"
    np.save(secret, np.full((10_000,), 7, np.int32))
    name = str(secret) if name == "ABSOLUTE" else name
    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)

    def point_action_elsewhere(record):
        record["keys"]["action"]["file"] = name

    _tamper(bucket_url, TED, point_action_elsewhere)
    with pytest.raises(CorruptInputError, match="the TED record names the file") as err:
        open_ted("atari", "Pong/1")
    assert repr(name) in str(err.value)
    from episode_warehouse.loading import EpisodeStream, select_episodes

    with pytest.raises(CorruptInputError, match="the TED record names the file"):
        selection = select_episodes(
            "SELECT source, partition, episode, start, length FROM episodes", root=bucket_url
        )
        next(iter(EpisodeStream(selection)))


def test_damaged_offsets_in_a_bucket_are_corrupt_input_fetched_once(bucket_url, tmp_path):
    """Offsets past the frame file's end (#57 items 10, 15): refused when the camera is opened,
    as corrupt input (never retried, never 'unreachable'), before a frame is fetched."""
    import io

    import numpy as np

    from episode_warehouse.errors import SourceUnavailableError
    from episode_warehouse.frames.rows import offsets_file
    from episode_warehouse.loading import EpisodeStream, select_episodes

    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    store = Bucket.parse(bucket_url).store()

    def damage(record):
        section = record[PUBLISHED]
        name = offsets_file(record["keys"]["observation"]["file"])
        info = store.stat(f"{TED}/{section['prefix']}/{name}")
        offsets = np.load(io.BytesIO(store.read_bytes(info.name, info.generation)))
        offsets[2] = 10**12
        out = io.BytesIO()
        np.save(out, offsets)
        planted = store.upload(f"{TED}/{section['prefix']}/{name}", data=out.getvalue())
        section["files"][name] = planted.to_json()

    _tamper(bucket_url, TED, damage)
    selection = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes", root=bucket_url
    )
    stream = EpisodeStream(selection, shuffle=False)
    with pytest.raises(CorruptInputError, match="frame offsets are damaged") as err:
        next(iter(stream))
    assert not isinstance(err.value, SourceUnavailableError)


def test_an_object_rewritten_under_a_current_record_is_not_called_a_replaced_version(
    bucket_url,
):
    """A data object overwritten outside the warehouse while its record stays published
    (#57 item 15): a reader is told the object was altered, not that its version was replaced
    (which tells it to reopen, and reopening finds the same record)."""
    from episode_warehouse.errors import StaleSelectionError
    from episode_warehouse.loading import EpisodeStream, select_episodes

    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=10)
    store = Bucket.parse(bucket_url).store()
    artifact = RemoteArtifact(Bucket.parse(bucket_url), TED)
    record = artifact.read()[0]
    file = record["keys"]["action"]["file"]
    store.upload(f"{TED}/{record[PUBLISHED]['prefix']}/{file}", data=b"rewritten")
    selection = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes", root=bucket_url
    )
    with pytest.raises(CorruptInputError, match="not the generation .* its record lists") as err:
        next(iter(EpisodeStream(selection, shuffle=False)))
    assert not isinstance(err.value, StaleSelectionError)
