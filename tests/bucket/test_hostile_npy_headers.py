"""A TED array whose ``.npy`` header is hostile is refused alike from a folder and from a bucket
(#69 item 12): before, negative or boolean dimensions, ``(2**63, 0)`` and a short header escaped
``open_ted`` as raw ``RuntimeError``, ``TypeError`` or ``TokenError``, and the bucket path read
a big-endian array the folder path refused."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage.bucket.artifact import PUBLISHED, RemoteArtifact
from episode_warehouse.storage.bucket.objects import Bucket
from episode_warehouse.ted.files import read_meta
from tests.bucket.conftest import layout_of
from tests.episode_warehouse.guards.test_npy_header import header
from tests.helpers import build_atari

TED = "ted/atari/Pong/1"
BAD = {
    "negative": header("(-1,)", descr="<i4"),
    "boolean": header("(True,)", descr="<i4"),
    "2**63 rows of nothing": header(f"({2**63}, 0)", descr="<i4"),
    "short": header("(400,)", descr="<i4")[:20],
    "null bytes": header("(400,)", descr="<i4")[:-30] + b"\x00" * 30,
    "big-endian": None,  # the partition's own actions, in the other byte order
}


def _planted(bad: str, actions: np.ndarray) -> bytes:
    if BAD[bad] is not None:
        return BAD[bad]
    swapped = actions.astype(actions.dtype.newbyteorder(">"))
    return header(repr(swapped.shape), descr=swapped.dtype.str) + swapped.tobytes()


def test_a_hostile_header_in_a_folder(tmp_path):
    root = tmp_path / "wh"
    build_atari(root, "Pong/1", 1, episodes=4)
    folder = WarehouseLayout.local(root).ted_dir("atari", "Pong/1")
    path = folder / read_meta(folder).keys["action"]["file"]
    actions = np.load(path)
    for bad in sorted(BAD):
        path.unlink()  # (the first time: a hard link of the decoded stage's file)
        path.write_bytes(_planted(bad, actions))
        with pytest.raises(CorruptInputError, match=r"action.*\.npy.*Fix: re-materialize") as err:
            open_ted("atari", "Pong/1", root=root)["action"][:2]
        assert str(folder) in str(err.value), bad


def test_a_hostile_header_in_a_bucket(bucket_url, tmp_path, monkeypatch):
    build_atari(layout_of(bucket_url), "Pong/1", 1, episodes=4)
    store = RemoteArtifact(Bucket.parse(bucket_url), TED).store
    info = store.stat(f"{TED}/meta.json")
    record = json.loads(store.read_bytes(info.name, info.generation))
    section = record[PUBLISHED]
    name = record["keys"]["action"]["file"]
    stored = store.stat(f"{TED}/{section['prefix']}/{name}")
    actions = np.load(io.BytesIO(store.read_bytes(stored.name, stored.generation)))
    for bad in sorted(BAD):
        planted = store.upload(stored.name, data=_planted(bad, actions))
        section["files"][name] = planted.to_json()
        store.upload(f"{TED}/meta.json", data=json.dumps(record).encode())
        monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / f"cache-{bad}"))
        with pytest.raises(CorruptInputError, match=r"action.*\.npy.*Fix: re-materialize"):
            td = open_ted("atari", "Pong/1", root=bucket_url)
            np.asarray(td["action"][:2])
