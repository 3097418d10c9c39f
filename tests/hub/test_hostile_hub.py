"""A hostile hub cannot make the warehouse write or delete outside huggingface_hub's cache
(#42): huggingface_hub names cached blobs after the server's ETag, unchecked."""

from __future__ import annotations

import pytest

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.hub.client import HubClient


@pytest.mark.parametrize(
    "headers",
    [
        {"ETag": '"../../../../victim"'},
        {"ETag": 'W/"../../../../victim"', "X-Linked-Etag": '"../../../../victim"'},
        {"X-Repo-Commit": "../../../../victim"},
        {"ETag": '"/tmp/victim"'},
    ],
)
def test_an_etag_that_climbs_out_of_the_cache_is_refused_and_nothing_is_written(
    hub, tmp_path, headers
):
    hub.store.create_repo("lab/data")
    sha = hub.store.commit("lab/data", {"meta/info.json": b'{"fps": 10}\n'})
    client = HubClient()
    file = client.files("lab/data", sha)["meta/info.json"]
    before = {p for p in tmp_path.rglob("*")}
    hub.file_headers.update(headers)
    with pytest.raises(
        CorruptInputError, match="would name a file outside huggingface_hub's cache"
    ):
        client.download("lab/data", sha, file)
    created = {p for p in tmp_path.rglob("*")} - before
    outside = [p for p in created if not p.is_relative_to(tmp_path / "hf-home")]
    assert not outside, outside
    assert not (tmp_path / "victim").exists()
    hub.file_headers.clear()
    assert client.download("lab/data", sha, file).read_bytes() == b'{"fps": 10}\n'
