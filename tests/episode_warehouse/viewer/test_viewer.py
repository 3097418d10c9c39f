"""The episode viewer's data (#43) against the TED it shows, read with ``open_ted`` and PIL.

The page's JSON, its frames and its listing are compared with values computed here from the
TED, the episodes tables and numpy; the HTTP routes through starlette's own test client.
"""

from __future__ import annotations

import io

import numpy as np
import PIL.Image
import pyarrow.parquet as pq
import pytest
import torch

from episode_warehouse.errors import CatalogQueryError, PartitionKeyError
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.ted import open_ted
from episode_warehouse.viewer import listing
from episode_warehouse.viewer.episode import camera_frame, episode_page
from episode_warehouse.viewer.frames import frame_answer
from episode_warehouse.viewer.overview import overview
from episode_warehouse.viewer.partition import PartitionTed
from tests.helpers import build_atari, build_lerobot, build_openx
from warehouse_fixtures.lerobot_writer import LeRobotSpec
from warehouse_fixtures.openx_writer import DatasetSpec

JOINTS = ("shoulder.pos", "elbow.pos", "gripper.pos")
ROBOT = LeRobotSpec(repo_id="lab/arm", lengths=(6, 9), joints=JOINTS, rewards=False)
PARTITIONS = [("atari", "Pong/1"), ("openx", "two_cams"), ("lerobot", "lab/arm")]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer") / "warehouse"
    build_atari(root, "Pong/1", 1, capacity=100, episodes=5, lengths=(20, 60))
    build_openx(root, DatasetSpec("two_cams", cameras=("image", "wrist"), image_size=16),
                [[12, 17], [9]])  # fmt: skip
    build_lerobot(root, ROBOT)
    return root


def _stored(folder, camera, row) -> bytes:
    """Row ``row``'s bytes in the camera's frame file, read from the files themselves (b"" for
    a camera stored decoded)."""
    frames = folder / f"{camera}.frames"
    if not frames.exists():
        return b""
    offsets = np.load(folder / f"{camera}.offsets.npy")
    return frames.read_bytes()[offsets[row] : offsets[row + 1]]


def _ted(root, source, partition):
    return PartitionTed(LocalRoot(root), source, partition)


def _episodes(root, source, partition):
    return pq.read_table(root / "ted" / source / partition / "episodes.parquet").to_pylist()


@pytest.mark.parametrize(("source", "partition"), PARTITIONS)
def test_an_episode_is_its_rows_of_the_ted(root, source, partition):
    td = open_ted(source, partition, root=root)
    ted = _ted(root, source, partition)
    for e, row in enumerate(_episodes(root, source, partition)):
        got = ted.rows(e)
        want = td[row["start"] : row["start"] + row["length"]]
        assert len(got) == row["length"]
        for key in want.keys(True, True):
            assert torch.equal(got.get(key), want.get(key)), key


@pytest.mark.parametrize(("source", "partition"), PARTITIONS)
def test_the_page_plots_the_ted_values(root, source, partition):
    td = open_ted(source, partition, root=root)
    ted = _ted(root, source, partition)
    e = len(_episodes(root, source, partition)) - 1
    page = episode_page(ted, e, str(root))
    rows = td[page["start"] : page["start"] + page["length"]]
    series = {s["key"]: s for s in page["series"]}
    action = rows["action"].reshape(len(rows), -1).double()
    assert series["action"]["values"] == action.T.tolist()  # every dimension, every step
    if ("next", "reward") in rows.keys(True, True):
        assert series["next/reward"]["values"] == [
            rows["next", "reward"].double().view(-1).tolist()
        ]
    for flag, steps in page["flags"].items():
        assert steps == torch.nonzero(rows["next", flag].view(-1)).view(-1).tolist()
    assert page["flags"]["done"] == [page["length"] - 1]  # the episode ends on its last step
    code = page["python"] + "step = episode[2]\n"
    scope: dict = {}
    exec(code, scope)  # the snippet opens exactly this episode
    assert torch.equal(scope["step"]["action"], rows[2]["action"])


def test_dimension_names_and_tasks_come_from_the_source(root):
    page = episode_page(_ted(root, "lerobot", "lab/arm"), 1, str(root))
    series = {s["key"]: s for s in page["series"]}
    assert series["action"]["names"] == list(JOINTS)
    assert series["observation/state"]["names"] == list(JOINTS)
    assert "next/reward" not in series  # a teleoperation recording has none; none is invented
    assert [c["name"] for c in page["cameras"]] == [
        "observation/image/top",
        "observation/image/wrist",
    ]
    td = open_ted("lerobot", "lab/arm", root=root)
    tasks = open_ted("lerobot", "lab/arm", root=root)["task_index"][page["start"]].item()
    assert page["tasks"][page["per_step"][0]] == ROBOT.tasks[tasks]
    assert len(page["per_step"]) == page["length"] and len(td) == sum(ROBOT.lengths)


@pytest.mark.parametrize(("source", "partition"), PARTITIONS)
def test_a_frame_is_the_ted_row_losslessly(root, source, partition):
    td = open_ted(source, partition, root=root)
    ted = _ted(root, source, partition)
    row = _episodes(root, source, partition)[1]
    page = episode_page(ted, 1, str(root))
    assert page["cameras"], "every fixture here has a camera"
    folder = WarehouseLayout.local(root).ted_dir(source, partition)
    served_stored = 0
    for camera in page["cameras"]:
        step = row["length"] - 1
        column, step, layout = camera_frame(ted, 1, step, camera["name"])
        body, media = frame_answer(column, step, layout)
        # a camera that keeps its source's PNG or JPEG is answered with the stored bytes
        stored = _stored(folder, camera["name"], row["start"] + step)
        if stored.startswith((b"\x89PNG", b"\xff\xd8\xff")):
            assert body == stored and media in ("image/png", "image/jpeg")
            served_stored += 1
        else:
            assert media == "image/png"
        decoded = np.asarray(PIL.Image.open(io.BytesIO(body)))
        want = td.get(tuple(camera["name"].split("/")))[row["start"] + step].numpy()
        want = want if want.ndim == 2 else want.transpose(1, 2, 0)
        assert np.array_equal(decoded, want.squeeze(-1) if want.shape[-1:] == (1,) else want)
    # Atari's frames are compressed pixels (a PNG is made per request); OpenX and LeRobot's
    # image datasets keep the PNGs they published
    assert served_stored == (0 if source == "atari" else len(page["cameras"]))


def test_a_step_or_camera_that_is_not_there_names_the_fix(root):
    ted = _ted(root, "atari", "Pong/1")
    with pytest.raises(PartitionKeyError, match="ask for a step from 0 to"):
        camera_frame(ted, 0, 10_000, "observation")
    with pytest.raises(PartitionKeyError, match="ask for one of: observation"):
        camera_frame(ted, 0, 0, "observation/wrist")
    n = len(_episodes(root, "atari", "Pong/1"))
    with pytest.raises(PartitionKeyError, match=rf"no episode 99 .* \(it has {n}: 0 to {n - 1}\)"):
        ted.rows(99)


def test_the_overview_counts_every_episode(root):
    rows = _episodes(root, "openx", "two_cams")
    page = overview(_ted(root, "openx", "two_cams"), None)
    assert sum(page["length"]["counts"]) == len(rows) == 3
    assert page["length"]["edges"][0] == min(r["length"] for r in rows)
    assert page["length"]["edges"][-1] == max(r["length"] for r in rows)
    assert page["action"] is None  # no statistics passed: the page says so


@pytest.mark.integration
def test_the_overview_action_statistics_equal_numpy(root):
    from episode_warehouse.catalog.statistics import publish_statistics, read_partition_statistics

    layout = WarehouseLayout.local(root)
    publish_statistics(layout, "openx", "two_cams", code_version="t")
    stats = read_partition_statistics(root, "openx", "two_cams")
    page = overview(_ted(root, "openx", "two_cams"), stats)["action"]
    action = open_ted("openx", "two_cams", root=root)["action"].double().numpy()
    columns = page["columns"]
    got = np.array(page["rows"])
    assert np.allclose(got[:, columns.index("mean")], action.mean(0))
    assert np.allclose(got[:, columns.index("std")], action.std(0))
    assert np.array_equal(got[:, columns.index("min")], action.min(0))
    assert np.array_equal(got[:, columns.index("max")], action.max(0))
    assert page["steps"] == len(action)


@pytest.mark.integration
def test_the_listing_filters_with_sql_and_sorts(root):
    layout = WarehouseLayout.local(root)
    got = listing.episodes(layout.root, "length > 20 AND source <> 'lerobot'", "length", True)
    expected = sorted(
        ((s, p, e, r["length"]) for s, p in PARTITIONS for e, r in enumerate(_episodes(root, s, p))
         if r["length"] > 20 and s != "lerobot"),
        key=lambda x: -x[3],
    )  # fmt: skip
    assert [r["length"] for r in got["rows"]] == [x[3] for x in expected]
    assert {(r["source"], r["partition"], r["episode"]) for r in got["rows"]} == {
        x[:3] for x in expected
    }
    assert got["more"] is False
    assert got["selection_sql"].endswith("WHERE (length > 20 AND source <> 'lerobot'\n)")
    assert got["export_command"].startswith("./warehouse export NAME 'SELECT source")
    parts = {(p["source"], p["partition"]): p["episodes"] for p in listing.partitions(layout.root)}
    assert parts == {(s, p): len(_episodes(root, s, p)) for s, p in PARTITIONS}


@pytest.mark.integration
@pytest.mark.parametrize(
    "where",
    ["1=1; DROP VIEW episodes", "1=1) UNION ALL SELECT * FROM read_text('/etc/passwd') --"],
)
def test_a_filter_cannot_write_or_read_outside(root, where):
    with pytest.raises(CatalogQueryError):
        listing.episodes(LocalRoot(root), where)
    with pytest.raises(CatalogQueryError, match="sort by one of"):
        listing.episodes(LocalRoot(root), "", sort="random()")


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_the_http_routes(root):
    from starlette.testclient import TestClient

    from episode_warehouse.viewer.app import build_app

    client = TestClient(build_app(LocalRoot(root)), base_url="http://127.0.0.1:8787")
    td = open_ted("atari", "Pong/1", root=root)
    row = _episodes(root, "atari", "Pong/1")[2]
    q = {"source": "atari", "partition": "Pong/1", "episode": 2}
    answer = client.get("/api/frame", params={**q, "t": 5, "camera": "observation"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    pixels = np.asarray(PIL.Image.open(io.BytesIO(answer.content)))
    assert np.array_equal(pixels, td["observation"][row["start"] + 5].numpy())
    page = client.get("/api/episode", params=q).json()
    assert page["length"] == row["length"] and page["start"] == row["start"]
    bad = client.get("/api/frame", params={**q, "t": "x", "camera": "observation"})
    assert bad.status_code == 400 and "t must be a whole number" in bad.json()["error"]
    missing = client.get("/api/episode", params={**q, "partition": "Pong/9"})
    assert missing.status_code == 404 and "materialize" in missing.json()["error"]
    escape = client.get("/api/episode", params={**q, "partition": "../../etc"})
    assert escape.status_code == 400
    listed = client.get("/api/episodes", params={"where": "source = 'atari'", "sort": "return",
                                                  "desc": "1"}).json()  # fmt: skip
    returns = [r["return"] for r in listed["rows"]]
    assert returns == sorted(returns, reverse=True)
    assert len(returns) == len(_episodes(root, "atari", "Pong/1"))
    assert client.get("/").status_code == 200
    assert client.get("/static/viewer.js").status_code == 200
