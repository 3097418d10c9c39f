"""Every folder name a partition key will need is checked when the key enters (#48): a Minari
id that passed its source's rule failed at the catalog (``File name too long``, its quoted key
is one folder) after raw, decoded and TED were published; the viewer answered a partition
holding a NUL byte or a 300-byte segment with a 500 and a traceback."""

from __future__ import annotations

import pytest

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.partition_keys import MAX_FOLDER_NAME, check_partition_key
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.sources.minari.dataset_id import check_dataset_id

# six segments of 40 characters: Minari's id rule takes it, its quoted form is 255 bytes
LONG_ID = "/".join(["a" * 40] * 5 + ["b" * 36 + "-v0"])


def test_an_id_minari_accepts_but_the_catalog_cannot_hold_is_refused_on_entry(tmp_path):
    assert check_dataset_id(LONG_ID) == LONG_ID  # the source's own rule passes it
    with pytest.raises(PartitionKeyError, match="catalog folder name .* over the"):
        registry.check_partition("minari", LONG_ID)
    with pytest.raises(PartitionKeyError):
        WarehouseLayout.local(tmp_path).raw_dir("minari", LONG_ID)  # the first stage's folder
    assert registry.check_partition("minari", "D4RL/door/human-v2") == "D4RL/door/human-v2"


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("a\x00b/c-v0", "control character"),
        ("x" * 300 + "/c-v0", "longer than 255 bytes"),
        ("x" * (MAX_FOLDER_NAME + 1) + "/c-v0", "a segment would be"),
        ("../x/c-v0", r"'\.\.' segment"),
    ],
)
def test_names_that_no_folder_can_hold(key, match):
    with pytest.raises(PartitionKeyError, match=match):
        check_partition_key("minari", key)


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
@pytest.mark.parametrize("partition", ["Pong\x00/1", "P" * 300 + "/1", LONG_ID])
def test_the_viewer_answers_400_naming_the_key(tmp_path, partition):
    from starlette.testclient import TestClient

    from episode_warehouse.storage.local import LocalRoot
    from episode_warehouse.viewer.app import build_app

    client = TestClient(build_app(LocalRoot(tmp_path)), base_url="http://127.0.0.1",
                        raise_server_exceptions=False)  # fmt: skip
    q = {"source": "minari", "partition": partition, "episode": 0}
    routes = [("episode", {}), ("partition", {}), ("frame", {"t": 0, "camera": "observation"}),
              ("step", {"t": 0})]  # fmt: skip
    for route, extra in routes:
        answer = client.get(f"/api/{route}", params={**q, **extra})
        assert answer.status_code == 400, (route, answer.text[:200])
        assert "partition key" in answer.json()["error"]


@pytest.mark.integration  # a CLI run: nothing published for a key refused on entry
def test_the_cli_refuses_the_key_before_any_stage(warehouse_env, capsys):
    from warehouse_cli.main import main

    assert main(["materialize", "minari", LONG_ID]) == 2
    assert "catalog folder name" in capsys.readouterr().err
    assert not (warehouse_env / "raw").exists()
