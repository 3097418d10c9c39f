"""Start `dagster dev` for a test and talk GraphQL to it."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from warehouse_cli.ui import start_dagster_dev, stop_process_group
from warehouse_fixtures.gcs_emulator import free_port

LOCATION = "episode_warehouse"
REPOSITORY = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__"}


class GraphQL:
    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(
            self.url + "/graphql", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            answer = json.loads(resp.read())
        if answer.get("errors"):
            raise RuntimeError(answer["errors"])
        return answer["data"]

    def wait_ready(self, proc, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"dagster dev exited with {proc.returncode}")
            try:
                data = self(
                    "{ workspaceOrError { ... on Workspace { locationEntries { "
                    "name locationOrLoadError { __typename } } } } }"
                )
                entries = data["workspaceOrError"]["locationEntries"]
                if (
                    entries
                    and entries[0]["locationOrLoadError"]["__typename"] == "RepositoryLocation"
                ):
                    return
            except (urllib.error.URLError, ConnectionError, RuntimeError, TimeoutError):
                pass
            time.sleep(1)
        raise TimeoutError("dagster dev did not load the code location in time")

    def wait_run(self, run_id: str, timeout: float = 300.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self(
                "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }",
                {"id": run_id},
            )["runOrError"]["status"]
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                return status
            time.sleep(1)
        raise TimeoutError(f"run {run_id} did not finish")


@contextmanager
def dagster_dev(log_path: Path):
    """Yield (GraphQL client, process) for a fresh `dagster dev` in its own process group."""
    port = free_port()
    with open(log_path, "wb") as log:
        proc = start_dagster_dev(port, dict(os.environ), log_file=log)
        try:
            client = GraphQL(f"http://127.0.0.1:{port}")
            client.wait_ready(proc)
            yield client, proc
        finally:
            stop_process_group(proc)
