"""The episode viewer (#43) in a real browser: the SQL filter, an episode's frames pixel-exact
against the TED, the plotted values, a deep link, the keyboard and playback.

Drives Debian's chromium with Playwright (``executable_path``; no browser download) against
``warehouse view`` started as a user starts it. Waits are on page states (a frame shown, a
label), never on a time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from episode_warehouse.ted import open_ted
from tests.e2e.test_ui_browser import CHROMIUM, FLAGS
from tests.helpers import build_atari, build_openx
from warehouse_fixtures.gcs_emulator import free_port
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
CANVAS_PIXELS = """img => {
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  return Array.from(g.getImageData(0, 0, c.width, c.height).data);
}"""


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer-browser") / "warehouse"
    build_atari(root, "Pong/1", 1, capacity=100, episodes=5, lengths=(20, 60))
    build_openx(root, DatasetSpec("two_cams", cameras=("image", "wrist"), image_size=24),
                [[12, 17], [9]])  # fmt: skip
    port = free_port()
    log = open(root.parent / "viewer.log", "wb")  # noqa: SIM115 - closed below
    cli = [sys.executable, "-m", "warehouse_cli.main"]
    proc = subprocess.Popen(
        [*cli, "view", "--root", str(root), "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "EPISODE_WAREHOUSE_ROOT": str(root.parent / "not-this-one")},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (root.parent / "viewer.log").read_text()
            try:
                with urllib.request.urlopen(url + "/api/info", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        assert b"ready: " + url.encode() in (root.parent / "viewer.log").read_bytes()
        yield url, root
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
        log.close()


@pytest.fixture(scope="module")
def page(viewer):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page
        browser.close()
        assert errors == [], errors


def _episodes(root, source, partition):
    return pq.read_table(root / "ted" / source / partition / "episodes.parquet").to_pylist()


def _shown(page, camera: int, step: int) -> np.ndarray:
    """The pixels the page shows for ``camera`` once it shows ``step`` (RGBA, from a canvas)."""
    img = page.locator(f'img#camera-{camera}[data-shown="{step}"]')
    img.wait_for()
    size = img.evaluate("img => [img.naturalHeight, img.naturalWidth]")
    return np.array(img.evaluate(CANVAS_PIXELS), np.uint8).reshape(*size, 4)


def _as_rgba(frame: np.ndarray) -> np.ndarray:
    """A TED frame (H, W) grey or (C, H, W) as the RGBA a browser draws it."""
    rgb = np.repeat(frame[..., None], 3, -1) if frame.ndim == 2 else frame.transpose(1, 2, 0)
    return np.concatenate([rgb, np.full((*rgb.shape[:2], 1), 255, np.uint8)], -1)


def _readouts(page, key: str, dims: int) -> list[float]:
    return [
        float(page.locator(f'.value[data-key="{key}"][data-dim="{j}"]').get_attribute("data-value"))
        for j in range(dims)
    ]


def test_the_sql_filter_lists_what_it_selects(viewer, page, tmp_path):
    url, root = viewer
    lengths = [r["length"] for p in (("atari", "Pong/1"), ("openx", "two_cams"))
               for r in _episodes(root, *p)]  # fmt: skip
    page.goto(url + "/?where=length+>+15&sort=length&desc=1")
    count = page.locator("#count[data-count]")
    count.wait_for()
    assert int(count.get_attribute("data-count")) == sum(n > 15 for n in lengths)
    listed = page.locator("tbody tr.link td:nth-child(4)").all_inner_texts()
    assert [int(x) for x in listed] == sorted((n for n in lengths if n > 15), reverse=True)
    assert "warehouse export NAME" in page.locator("#selection").inner_text()
    page.screenshot(path=str(tmp_path / "viewer-list.png"))

    page.locator("#where").fill("1=1; DROP VIEW episodes")  # refused, and says why
    page.locator("#apply").click()
    page.locator('#count[data-count="error"]').wait_for()
    assert page.locator("#error").inner_text().strip() != ""

    page.goto(url + "/?where=source+%3D+'openx'")
    page.locator("tbody tr.link").first.click()  # a row opens its episode
    page.locator("body[data-ready=episode]").wait_for()
    assert "view=episode" in page.url and "source=openx" in page.url


def test_an_episode_shows_the_ted_pixel_exact_with_its_values(viewer, page, tmp_path):
    url, root = viewer
    td = open_ted("openx", "two_cams", root=root)
    row = _episodes(root, "openx", "two_cams")[1]
    step = 7
    page.goto(url + f"/?view=episode&source=openx&partition=two_cams&episode=1&t={step}")
    page.locator("body[data-ready=episode]").wait_for()
    assert page.locator("#step").inner_text() == f"step {step} / {row['length'] - 1}"
    for i, camera in enumerate(("image", "wrist")):
        want = td["observation", camera][row["start"] + step].numpy()
        assert np.array_equal(_shown(page, i, step), _as_rgba(want)), camera
    action = td["action"][row["start"] + step].double().tolist()
    assert _readouts(page, "action", len(action)) == action
    state = td["observation", "state"][row["start"] + step].double().tolist()
    assert _readouts(page, "observation/state", len(state)) == state
    polyline = page.locator('svg[data-key="action"][data-dim="0"] polyline')
    assert len(polyline.get_attribute("points").split()) == row["length"]  # a point a step
    page.screenshot(path=str(tmp_path / "viewer-episode.png"), full_page=True)

    page.keyboard.press("ArrowRight")  # the keyboard steps, every camera and plot follows
    want = td["observation", "wrist"][row["start"] + step + 1].numpy()
    assert np.array_equal(_shown(page, 1, step + 1), _as_rgba(want))
    assert (
        _readouts(page, "action", len(action))
        == td["action"][row["start"] + step + 1].double().tolist()
    )
    assert f"t={step + 1}" in page.url  # the address is a deep link to what is shown

    page.locator("#play").click()  # playback runs to the episode's last step and stops
    last = row["length"] - 1
    page.locator(f'img#camera-0[data-step="{last}"]').wait_for()
    page.locator("#play", has_text="Play").wait_for()
    done = page.locator(".marks .done").inner_text()
    assert done == f"done: {last}"


def test_a_grey_atari_frame_and_the_overview(viewer, page, tmp_path):
    url, root = viewer
    td = open_ted("atari", "Pong/1", root=root)
    row = _episodes(root, "atari", "Pong/1")[0]
    page.goto(url + "/?view=episode&source=atari&partition=Pong/1&episode=0&t=3")
    want = td["observation"][row["start"] + 3].numpy()
    assert np.array_equal(_shown(page, 0, 3), _as_rgba(want))
    assert _readouts(page, "action", 1) == [float(td["action"][row["start"] + 3])]

    page.goto(url + "/?view=partition&source=atari&partition=Pong/1")
    page.get_by_text("Episode length (steps)").wait_for()
    bars = page.locator("svg.hist").first.locator("rect")
    titles = [bars.nth(i).locator("title").text_content() for i in range(bars.count())]
    assert sum(int(t.rsplit(": ", 1)[1]) for t in titles) == len(_episodes(root, "atari", "Pong/1"))
    page.screenshot(path=str(tmp_path / "viewer-partition.png"), full_page=True)
