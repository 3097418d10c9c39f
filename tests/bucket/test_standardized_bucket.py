"""The standardized stage on a ``gs://`` root (#49): it uploads no frame (its views name the
TED's files), reads its mapping from the bucket, and a reader on another machine opens it from
the bucket alone, the TED its views read fetched whole into its reader cache (its rows are
drawn at random)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from episode_warehouse.incremental import published
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.standardized import open_standardized
from episode_warehouse.standardized.mapping import MAPPINGS_FILE, mapping_for
from episode_warehouse.standardized.reader import locate
from episode_warehouse.standardized.stage import build_standardized_stage
from episode_warehouse.storage import parse_root
from tests.bucket.conftest import layout_of
from tests.episode_warehouse.standardized.conftest import build_ted, features_json
from warehouse_fixtures.oxe_from_features import write_from_features

NAME = "taco_play"


@pytest.fixture
def built(shared_samples, bucket_url, tmp_path):
    """taco_play standardized in the bucket root and, for the truth, in a folder root."""
    write_from_features(tmp_path / "src", NAME, features_json(shared_samples, NAME), [5, 4])
    bucket, local = layout_of(bucket_url), WarehouseLayout.local(tmp_path / "local-wh")
    for layout in (bucket, local):
        build_ted(layout, tmp_path / "src", NAME)
        build_standardized_stage(layout, "openx", NAME, code_version="t")
    return bucket, local


def test_no_frame_is_uploaded_and_another_machine_reads_it_all(built, tmp_path, monkeypatch):
    bucket, local = built
    record = published(bucket.root, bucket.standardized_dir("openx", NAME))
    ted = published(bucket.root, bucket.ted_dir("openx", NAME))
    uploaded = record.fields_json()["published"]["files"]
    ted_files = ted.fields_json()["published"]["files"]
    frame_file = ted_files["observation/rgb_static.frames"]["size"]
    decoded_frames = ted.fields_json()["rows"] * 3 * 150 * 200  # the camera's pixels
    assert sum(f["size"] for f in uploaded.values()) < decoded_frames / 10
    assert not any("rgb" in name or name.startswith("images/") for name in uploaded)

    shutil.rmtree(bucket.folder)  # another machine: no local copy, an empty cache
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "elsewhere" / "copy"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "elsewhere" / "cache"))
    got = open_standardized("openx", NAME, root=bucket.url)
    truth = open_standardized("openx", NAME, root=local.folder)
    assert set(got.keys(True, True)) == set(truth.keys(True, True))
    for key in truth.keys(True, True):
        if key != "language_instruction":
            assert torch.equal(got.get(key), truth.get(key)), key
    assert list(got["language_instruction"]) == list(truth["language_instruction"])
    frames = locate("openx", NAME, bucket.url).frames("primary")[[0, 3]]
    assert frames.shape == (2, 3, 150, 200)
    assert np.array_equal(frames, locate("openx", NAME, local.folder).frames("primary")[[0, 3]])
    # a view is read at random: its TED fetched whole, once, into the reader cache (one copy
    # of the camera's file, of its published size), and nothing into a local copy
    cached = list((tmp_path / "elsewhere" / "cache").rglob("observation/rgb_static.frames"))
    assert [p.stat().st_size for p in cached] == [frame_file]
    assert not (tmp_path / "elsewhere" / "copy").exists()


def test_the_mapping_is_read_from_the_bucket(bucket_url):
    """A declared mapping is a document of the root: on a bucket root, an object (it was read
    from the machine's local copy, which another machine does not have)."""
    root = layout_of(bucket_url).root
    mapping = {"lab:arm": {"action": "action", "action_encoding": "OTHER", "views": {}}}
    root.write_text(MAPPINGS_FILE.as_posix(), json.dumps(mapping), expected=None)
    shutil.rmtree(root.folder)
    keys = {"action": {"kind": "array"}}
    got = mapping_for(parse_root(bucket_url), "lab", "arm", keys, shapes={"action": (7,)})
    assert got["action"] == "action" and got["action_encoding"] == "OTHER"
