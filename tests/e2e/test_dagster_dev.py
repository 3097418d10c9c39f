"""dagster dev end to end: asset graph over GraphQL, launch a partition, clean shutdown."""

import os
import time

import pytest

from episode_warehouse import open_ted
from tests.e2e.dagster_server import REPOSITORY, dagster_dev

pytestmark = pytest.mark.e2e

LAUNCH = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""


def test_graph_launch_and_shutdown(warehouse_env, tmp_path):
    with dagster_dev(tmp_path / "dagster.log") as (gql, proc):
        nodes = gql("{ assetNodes { assetKey { path } groupName isPartitioned } }")["assetNodes"]
        by_key = {n["assetKey"]["path"][0]: n for n in nodes}
        assert by_key["atari_ted"]["groupName"] == "atari" and by_key["atari_ted"]["isPartitioned"]
        assert {"openx_shards", "episode_catalog", "atari_catalog_rows"} <= set(by_key)

        params = {
            "selector": {
                **REPOSITORY,
                "jobName": "__ASSET_JOB",
                "assetSelection": [
                    {"path": [k]}
                    for k in (
                        "atari_replay_files",
                        "atari_episodes",
                        "atari_ted",
                        "atari_catalog_rows",
                    )
                ],
            },
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "Pong/1"}]},
        }
        launched = gql(LAUNCH, {"params": params})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        assert gql.wait_run(launched["run"]["runId"]) == "SUCCESS", (
            tmp_path / "dagster.log"
        ).read_text()[-3000:]
        pgid = proc.pid
    deadline = time.monotonic() + 10  # killed children are reaped by init shortly after
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # the whole process group is gone
    td = open_ted("atari", "Pong/1")
    assert td.batch_size[0] > 1000
