"""The Dagster UI in a real browser: graph, an Atari asset, a launch from the UI, plots, checks.

Drives Debian's chromium with Playwright (``executable_path``; no browser download). Screenshots
go to the test's temporary folder (its path is printed).
"""

import shutil
import time
from pathlib import Path

import pytest

from tests.e2e.dagster_server import REPOSITORY, dagster_dev
from tests.e2e.test_dagster_dev import LAUNCH

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # ~2.5 min: in CI's slow run
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _latest_run(gql) -> dict:
    data = gql("{ runsOrError(limit: 1) { ... on Runs { results { runId status } } } }")
    results = data["runsOrError"]["results"]
    return results[0] if results else {}


def _wait_new_run_success(gql, previous_id: str, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = _latest_run(gql)
        if run and run["runId"] != previous_id and run["status"] in ("SUCCESS", "FAILURE"):
            return run["status"]
        time.sleep(1)
    raise TimeoutError("the run launched from the UI did not finish")


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run installs it)"
)
def test_browse_launch_and_see_plots_and_checks(warehouse_env, tmp_path):
    from playwright.sync_api import sync_playwright

    artifacts = tmp_path / "screenshots"
    artifacts.mkdir()
    print(f"screenshots in {artifacts}")
    with dagster_dev(tmp_path / "dagster.log") as (gql, _proc):
        upstream = {
            "selector": {
                **REPOSITORY,
                "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": ["atari_replay_files"]}, {"path": ["atari_episodes"]}],
            },
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "Pong/1"}]},
        }
        run_id = gql(LAUNCH, {"params": upstream})["launchRun"]["run"]["runId"]
        assert gql.wait_run(run_id) == "SUCCESS"

        # Dagster's one-time "join the community" dialog opens a second after a page loads and
        # swallows clicks; the UI asks the server whether to show it, so mark it seen there.
        assert gql("mutation { setNuxSeen }")["setNuxSeen"] is True

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(30_000)

            page.goto(gql.url + "/asset-groups~group%3A%22atari%22")  # the Atari group graph
            page.get_by_text("atari_ted").first.wait_for()
            page.screenshot(path=str(artifacts / "1-graph.png"))

            page.goto(gql.url + "/assets/atari_ted")
            page.get_by_role("button", name="Materialize…").first.click()
            page.get_by_text("Select a partition or create one").click()
            page.keyboard.type("Pong/1")
            page.get_by_text("Select all (1)").click()  # the one partition that matches
            page.keyboard.press("Escape")
            page.screenshot(path=str(artifacts / "2-launch-dialog.png"))
            page.locator(".bp5-dialog button", has_text="Launch").last.click()
            assert _wait_new_run_success(gql, run_id) == "SUCCESS"

            page.goto(gql.url + "/assets/atari_ted")
            page.get_by_text("distributions", exact=True).first.wait_for()
            page.get_by_text("[Show Markdown]").first.click()  # the return/length histograms
            plot = page.locator("img[src^='data:image/png']").first
            plot.wait_for()
            assert plot.evaluate("img => img.naturalWidth") > 100
            page.screenshot(path=str(artifacts / "3-asset-with-plots.png"))
            page.keyboard.press("Escape")

            page.goto(gql.url + "/assets/atari_ted?view=checks")
            page.get_by_text("ted_consistency").first.wait_for()
            page.get_by_text("Passed").first.wait_for()
            page.screenshot(path=str(artifacts / "4-checks.png"))
            browser.close()
