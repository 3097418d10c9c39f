"""An episode opened in Rerun (#48): the viewer's "open in Rerun" writes the episode's cameras
and every scalar on one timeline into a ``.rrd`` file; read back here with rerun-sdk's own
reader, its values equal the TED's."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.ted import open_ted
from episode_warehouse.viewer.partition import PartitionTed
from episode_warehouse.viewer.rerun_file import write_episode_rrd
from tests.episode_warehouse.viewer.test_viewer import _episodes, root  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _read(path_or_bytes, tmp_path) -> dict[str, dict[str, list]]:
    """{entity path: {column: values}} of every chunk of the recording (rerun-sdk's reader)."""
    import rerun.chunk as chunk

    path = tmp_path / "read.rrd"
    if isinstance(path_or_bytes, bytes):
        path.write_bytes(path_or_bytes)
    else:
        path = path_or_bytes
    out: dict[str, dict[str, list]] = {}
    for c in chunk.RrdReader(path).store().stream():
        batch = c.to_record_batch()
        columns = out.setdefault(c.entity_path, {})
        for name in batch.schema.names:
            columns.setdefault(name, []).extend(batch.column(name).to_pylist())
    return out


def _by_step(columns: dict, component: str) -> dict[int, object]:
    return dict(zip(columns["step"], columns[component], strict=True))


def test_an_openx_episode_reads_back_with_rerun(root, tmp_path):  # noqa: F811
    ted = PartitionTed(LocalRoot(root), "openx", "two_cams")
    row = _episodes(root, "openx", "two_cams")[1]
    td = open_ted("openx", "two_cams", root=root)[row["start"] : row["start"] + row["length"]]
    got = _read(write_episode_rrd(ted, 1, tmp_path / "e.rrd"), tmp_path)
    n = row["length"]
    # every action dimension on the step timeline, equal to the TED's
    action = td["action"].double().numpy().reshape(n, -1)
    series = sorted(k for k in got if k.startswith("/series/action/"))
    assert len(series) == action.shape[1]
    for j, entity in enumerate(series):
        values = _by_step(got[entity], "Scalars:scalars")
        assert [values[t][0] for t in range(n)] == pytest.approx(action[:, j].tolist())
    done = _by_step(got["/flags/done"], "Scalars:scalars")
    assert [done[t][0] for t in range(n)] == [0.0] * (n - 1) + [1.0]
    # both cameras, every frame, as the bytes the source published and the TED stores (#57
    # item 17: raw pixels were 7.5x the JPEGs), decoding to the TED's pixels
    import io

    from PIL import Image

    reader = ted._reader
    for camera in ("image", "wrist"):
        entity = got[f"/cameras/observation\\/{camera}"]
        blobs = _by_step(entity, "EncodedImage:blob")
        assert sorted(blobs) == list(range(n))
        stored = reader.file_rows(reader.meta.keys[f"observation/{camera}"]["file"])
        want = td["observation", camera].numpy()
        for t in (0, n - 1):
            blob = bytes(blobs[t][0])
            assert blob == stored.blob(row["start"] + t)
            pixels = np.asarray(Image.open(io.BytesIO(blob)))
            np.testing.assert_array_equal(pixels.reshape(want[t].shape[1:] + (-1,)),
                                          want[t].transpose(1, 2, 0))  # fmt: skip


@pytest.mark.integration  # the viewer's route
def test_the_viewer_serves_the_file(root, tmp_path):  # noqa: F811
    from starlette.testclient import TestClient

    from episode_warehouse.viewer.app import build_app

    client = TestClient(build_app(LocalRoot(root)), base_url="http://127.0.0.1")
    q = {"source": "atari", "partition": "Pong/1", "episode": 2}
    answer = client.get("/api/rerun", params=q)
    assert answer.status_code == 200
    assert 'filename="atari-Pong_1-episode-2.rrd"' in answer.headers["content-disposition"]
    got = _read(answer.content, tmp_path)
    row = _episodes(root, "atari", "Pong/1")[2]
    frames = _by_step(got["/cameras/observation"], "Image:buffer")
    assert sorted(frames) == list(range(row["length"]))
    td = open_ted("atari", "Pong/1", root=root)
    first = np.array(frames[0][0], np.uint8).reshape(td["observation"].shape[1:])
    np.testing.assert_array_equal(first, td["observation"][row["start"]].numpy())
    reward = _by_step(got["/series/next/reward/next\\/reward"], "Scalars:scalars")
    assert len(reward) == row["length"]
    bad = client.get("/api/rerun", params={**q, "episode": 99})
    assert bad.status_code == 400 and "no episode 99" in bad.json()["error"]
