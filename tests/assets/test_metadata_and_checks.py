"""Materialization metadata and asset checks are computed from the data they describe."""

import base64
import io
import os
import re
import shutil

import dagster as dg
import numpy as np
import pytest
from PIL import Image

from episode_warehouse import open_ted
from episode_warehouse.catalog.rows import folder_bytes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.validate import check_ted
from warehouse_cli.runner import materialize_partition

# one worker runs the module: its module fixture is built once, not once a worker
pytestmark = pytest.mark.xdist_group("metadata_and_checks")


@pytest.fixture(scope="module")
def built(tmp_path_factory, demo_fixtures, gcs_endpoint):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("meta") / "wh"
    mp.setenv("EPISODE_WAREHOUSE_ROOT", str(root))
    mp.setenv("ATARI_REPLAY_URL", "gs://demo-atari-replay/dqn")
    mp.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    mp.setenv("OPENX_URL", str(demo_fixtures / "openx"))
    mp.setenv("EPISODE_WAREHOUSE_VIEWER_URL", "http://127.0.0.1:8787")  # as `warehouse ui` sets
    with dg.instance_for_test() as instance:
        result = materialize_partition("atari", "Pong/5", instance=instance)
        yield root, result
    mp.undo()


def _materialization(result, name):
    return result.asset_materializations_for_node(name)[0].metadata


def _png(md: str) -> Image.Image:
    data = re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", md).group(1)
    raw = base64.b64decode(data)
    assert len(raw) < 60_000  # kept small: it lives in the event log
    return Image.open(io.BytesIO(raw))


def test_checks_ran_and_passed(built):
    _, result = built
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert {"ted_consistency", "rows_match_ted", "loads_with_lerobot"} <= set(evaluations)
    assert all(e.passed for e in evaluations.values())
    assert evaluations["rows_match_ted"].metadata["catalog_episodes"].value == 12


def test_metadata_values_match_the_data(built):
    root, result = built
    layout = WarehouseLayout.from_root(root)
    td = open_ted("atari", "Pong/5", root)
    ted_meta = _materialization(result, "atari_ted")
    assert ted_meta["frames"].value == td.batch_size[0]
    assert ted_meta["episodes"].value == int(td["episode"].max()) + 1
    assert ted_meta["bytes_on_disk"].value == folder_bytes(layout.ted_dir("atari", "Pong/5"))
    assert ted_meta["path"].value == str(layout.ted_dir("atari", "Pong/5"))
    strip = _png(ted_meta["first_frames"].value)
    assert strip.size == (6 * 64 + 5 * 2, 64)
    first = np.asarray(strip.convert("L"))[:, :64]
    expected = np.asarray(Image.fromarray(td["observation"][0].numpy()).resize((64, 64)))
    assert np.abs(first.astype(int) - expected.astype(int)).max() <= 1
    assert _png(ted_meta["distributions"].value).size[0] > 300
    raw_meta = _materialization(result, "atari_replay_files")
    assert raw_meta["files"].value == len(
        list((layout.raw_dir("atari", "Pong/5") / "replay_logs").glob("*.gz"))
    )
    export_meta = _materialization(result, "atari_lerobot_export")
    assert export_meta["frames"].value == td.batch_size[0]


def test_ted_and_catalog_materializations_link_to_the_viewer(built):
    _, result = built
    want = "http://127.0.0.1:8787/?view=partition&source=atari&partition=Pong%2F5"
    for asset in ("atari_ted", "atari_catalog_rows"):
        assert _materialization(result, asset)["viewer"].value == want, asset
    assert "viewer" not in _materialization(result, "atari_episodes")


def test_ted_check_finds_nan_rewards_and_broken_boundaries(built, tmp_path):
    root, _ = built
    copy = tmp_path / "ted"
    shutil.copytree(WarehouseLayout.from_root(root).ted_dir("atari", "Pong/5"), copy)
    assert check_ted(copy).ok
    reward = np.load(copy / "next" / "reward.npy", mmap_mode="r+")
    reward[5] = np.nan
    reward.flush()
    done = np.load(copy / "next" / "done.npy", mmap_mode="r+")
    done[3] = True
    done.flush()
    problems = check_ted(copy).problems
    assert any("NaN" in p for p in problems)
    assert any("last step" in p for p in problems)


def test_ted_check_finds_a_camera_whose_frames_do_not_decode(built, tmp_path):
    root, _ = built
    copy = tmp_path / "ted"
    shutil.copytree(WarehouseLayout.from_root(root).ted_dir("atari", "Pong/5"), copy)
    frames = copy / "observation.frames"
    data = bytearray(frames.read_bytes())
    data[4:40] = bytes(36)  # the first frame's zstd header and first block, zeroed
    frames.write_bytes(bytes(data))
    problems = check_ted(copy).problems
    assert any("observation.frames" in p and "row 0" in p for p in problems), problems
    os.truncate(frames, len(data) - 1)
    assert any("offsets" in p for p in check_ted(copy).problems)


def test_headless_runs_link_to_the_viewer_too(tmp_path, monkeypatch):
    """#48: the demo's materializations carried no viewer link (only runs made while a viewer
    ran): the link now names the default viewer and the command that starts it."""
    from resources import RunSettings, WarehouseStorage

    monkeypatch.delenv("EPISODE_WAREHOUSE_VIEWER_URL", raising=False)
    storage = WarehouseStorage(root=str(tmp_path / "my wh"))
    link = RunSettings().viewer_link(storage.layout().url, "atari", "Pong/5")
    assert link["viewer"].value == (
        "http://127.0.0.1:8787/?view=partition&source=atari&partition=Pong%2F5"
    )
    assert link["viewer_start"] == f"./warehouse view --root '{tmp_path / 'my wh'}'"
    running = RunSettings(viewer_url="http://127.0.0.1:9000")
    assert set(running.viewer_link(str(tmp_path), "atari", "Pong/5")) == {"viewer"}
