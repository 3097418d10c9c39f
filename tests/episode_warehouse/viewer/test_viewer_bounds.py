"""What one viewer request may cost (#48): one episode request on a wide 100k-step episode
built a 503 MB JSON; a ')' in the filter closed its wrapper so UNION ALL returned arbitrary
rows; 44 slow filters took the 40-thread pool and stalled every API call. Now a page's points
are bounded (long series drawn from buckets' minima and maxima, exact values per step from the
step route), the filter is one expression, and catalog queries have a few slots of their own."""

from __future__ import annotations

import json
from contextlib import ExitStack

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from episode_warehouse.errors import CatalogQueryError
from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.ted import open_ted
from episode_warehouse.viewer import listing
from episode_warehouse.viewer.episode import MAX_POINTS, envelope, series, step_values
from episode_warehouse.viewer.partition import PartitionTed
from tests.episode_warehouse.viewer.test_viewer import _episodes, root  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _wide_episode(steps=100_000, state=32, action=8) -> TensorDict:
    rng = np.random.default_rng(0)
    return TensorDict({
        "action": torch.from_numpy(rng.normal(size=(steps, action)).astype(np.float32)),
        "observation": {"state": torch.from_numpy(rng.normal(size=(steps, state)))},
        "next": {"reward": torch.from_numpy(rng.normal(size=(steps, 1)).astype(np.float32))},
    }, batch_size=[steps])  # fmt: skip


def test_a_wide_long_episode_is_sent_in_bounded_points_with_its_extremes():
    rows = _wide_episode()
    plotted, _ = series(rows, {})
    answer = json.dumps(plotted)
    assert len(answer) < 12 << 20  # was ~80 MB for these 4.1M values (503 MB on a wider one)
    points = sum(len(v) for s in plotted for v in s["values"])
    assert points <= MAX_POINTS * 2  # min and max per bucket
    state = rows["observation", "state"].numpy()
    entry = next(s for s in plotted if s["key"] == "observation/state")
    for j in range(state.shape[1]):
        steps, values = entry["steps"][j], entry["values"][j]
        assert steps == sorted(set(steps)) and values == state[steps, j].tolist()
        assert int(state[:, j].argmin()) in steps and int(state[:, j].argmax()) in steps


def test_a_short_series_is_sent_whole_and_missing_values_are_none():
    values = np.array([1.0, np.nan, 3.0, np.inf])
    assert envelope(values, 100) == ([0, 1, 2, 3], [1.0, None, 3.0, None])
    long = np.full(1000, np.nan)
    long[500] = 7.0
    steps, got = envelope(long, 10)
    assert 500 in steps and got[steps.index(500)] == 7.0 and len(steps) <= 10


def test_the_step_route_gives_exact_values(root):  # noqa: F811
    ted = PartitionTed(LocalRoot(root), "openx", "two_cams")
    row = _episodes(root, "openx", "two_cams")[1]
    td = open_ted("openx", "two_cams", root=root)
    got = step_values(ted, 1, 3)
    want = td[row["start"] + 3]
    assert got["action"] == pytest.approx(want["action"].double().reshape(-1).tolist())
    with pytest.raises(Exception, match="no step 999"):
        step_values(ted, 1, 999)


@pytest.mark.parametrize("where", [
    "1=1) UNION ALL SELECT source, partition, episode, 9999, 0, 0, 0, 0, 0, true, true, "
    "'x' FROM episodes WHERE (1=1",
    "1=1) GROUP BY ALL HAVING (1=1",
    "x" * (listing.MAX_FILTER_CHARS + 1),
])  # fmt: skip
def test_a_filter_is_one_expression(where):
    with pytest.raises(CatalogQueryError, match="filter"):
        listing.check_filter(where)


def test_filters_that_are_one_expression_pass():
    for where in ("length > 20", "task = ')'", "(SELECT count(*) FROM episodes) > 1",
                  "1=1) OR (1=1", "language_instruction LIKE '%pick%'\n-- a comment"):  # fmt: skip
        assert listing.check_filter(where) == where


@pytest.mark.integration  # the SQL sandbox
def test_busy_query_slots_answer_503_at_once_and_the_rest_of_the_api_answers(root):  # noqa: F811
    from starlette.testclient import TestClient

    from episode_warehouse.viewer.app import build_app

    client = TestClient(build_app(LocalRoot(root)), base_url="http://127.0.0.1")
    assert client.get("/api/episodes", params={"where": "length > 0"}).status_code == 200
    with ExitStack() as held:
        for _ in range(listing.QUERY_SLOTS):  # every slot taken, as by slow filters
            held.enter_context(listing.query_slot())
        busy = client.get("/api/episodes", params={"where": "length > 0"})
        assert busy.status_code == 503 and busy.headers["retry-after"] == "2"
        assert "catalog queries or Rerun files" in busy.json()["error"]
        q = {"source": "atari", "partition": "Pong/1", "episode": 0}
        assert client.get("/api/info").status_code == 200
        assert client.get("/api/episode", params=q).status_code == 200
        frame = client.get("/api/frame", params={**q, "t": 0, "camera": "observation"})
        assert frame.status_code == 200
    assert client.get("/api/episodes", params={"where": "length > 0"}).status_code == 200
