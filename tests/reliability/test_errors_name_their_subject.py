"""Inputs that used to end in an error without a subject (#42, defect 10): a bare
RecursionError, OverflowError or OSError, or a "missing object". Each is now our error, naming
the file or record and the fix."""

from __future__ import annotations

import json
import shutil

import pytest

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.sources.openx.rlds.listing import list_rlds
from episode_warehouse.storage.bucket.artifact import check_record


def _sample(shared_samples, tmp_path, change):
    """A copy of the real bridge RLDS folder whose features.json is ``change(text)``."""
    src = shared_samples / "rlds" / "bridge"
    copy = tmp_path / "src" / "bridge"
    shutil.copytree(src, copy)
    features = next(copy.rglob("features.json"))
    features.write_text(change(features.read_text()))
    return tmp_path / "src"


def test_a_deeply_nested_features_json_is_refused_naming_it(shared_samples, tmp_path):
    src = _sample(shared_samples, tmp_path, lambda text: "[" * 200_000 + "]" * 200_000)
    with pytest.raises(LimitExceededError, match=r"features.json: the JSON document nests deeper"):
        list_rlds(open_blob_store(str(src)), "bridge")


def test_a_declared_shape_of_ten_to_the_twenty_elements_is_refused_naming_the_feature(
    shared_samples, tmp_path
):
    def huge(text):
        doc = json.loads(text)
        steps = doc["featuresDict"]["features"]["steps"]["sequence"]["feature"]["featuresDict"]
        steps["features"]["reward"]["tensor"]["shape"] = {"dimensions": ["10000000000"] * 2}
        return json.dumps(doc)

    src = _sample(shared_samples, tmp_path, huge)
    with pytest.raises(
        LimitExceededError,
        match=r"features.json: feature reward declares \(10000000000, 10000000000\)",
    ):
        list_rlds(open_blob_store(str(src)), "bridge")


def _record(files):
    return {
        "published": {
            "token": "t1",
            "prefix": ".v/t1",
            "files": {f: {"size": 1, "generation": "1", "crc32c": "AAAAAA=="} for f in files},
        }
    }


def test_a_300_byte_record_entry_is_refused_before_any_file_is_made():
    with pytest.raises(CorruptInputError, match="longer than 255 bytes"):
        check_record(_record(["arrays/" + "x" * 300 + ".npy"]), "gs://b/wh/ted/x/meta.json")


def test_an_entry_that_is_a_folder_of_another_is_refused_by_name():
    with pytest.raises(CorruptInputError, match="lists 'arrays/a' as a file and 'arrays/a/b.npy'"):
        check_record(_record(["arrays/a", "arrays/a/b.npy"]), "gs://b/wh/ted/x/meta.json")


def test_open_ted_of_a_partition_not_built_names_the_close_ones(tmp_path):
    """#43: an open_ted typo got a bare 'meta.json is missing'."""
    from episode_warehouse import open_ted
    from episode_warehouse.errors import NotMaterializedError
    from tests.helpers import build_atari

    build_atari(tmp_path / "wh", "Pong/3", 3, capacity=300, episodes=20, lengths=(20, 60))
    with pytest.raises(NotMaterializedError) as err:
        open_ted("atari", "pong/3", root=tmp_path / "wh")
    text = str(err.value)
    assert "did you mean 'Pong/3'" in text and "warehouse materialize atari pong/3" in text
    with pytest.raises(NotMaterializedError, match="no TED of atari 'Breakout/1'.*built: Pong/3"):
        open_ted("atari", "Breakout/1", root=tmp_path / "wh")


def test_no_catalog_in_a_wrong_root_says_to_check_the_root(tmp_path):
    """#43: 'no catalog' suggested the demo when the root was only mistyped."""
    from episode_warehouse.catalog.query import run_query
    from episode_warehouse.errors import NotMaterializedError
    from episode_warehouse.storage.local import LocalRoot

    with pytest.raises(NotMaterializedError) as err:
        run_query(LocalRoot(tmp_path / "typo"), "SELECT 1")
    assert "nothing was ever built in this root: check --root or EPISODE_WAREHOUSE_ROOT" in str(
        err.value
    )
    assert str(tmp_path / "typo") in str(err.value)
