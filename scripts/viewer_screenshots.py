"""Screenshots of the episode viewer for docs/images/ (list, episode, partition pages).

Usage (the demo warehouse, a viewer running on it):
    ./warehouse view --root demo-data/warehouse --port 8787 &
    .venv/bin/python scripts/viewer_screenshots.py http://127.0.0.1:8787 docs/images
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

PAGES = {
    "viewer-list.png": "/?where=length+%3E+100&sort=return&desc=1",
    "viewer-episode.png": "/?view=episode&source=openx&partition=bridge&episode=1&t=5",
    "viewer-atari.png": "/?view=episode&source=atari&partition=Pong/1&episode=1&t=40",
    "viewer-partition.png": "/?view=partition&source=openx&partition=bridge",
}


def main(url: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        for name, query in PAGES.items():
            page.goto(url + query)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(out / name))
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
