"""Pictures of a TED folder, drawn once when it is built and kept in ``report/``."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from episode_warehouse.report.plots import distributions_png, thumbnails_png

REPORT = "report"
PICTURES = ("distributions", "first_frames")


def write_ted_report(folder: Path, thumbnails: int = 6) -> None:
    """Return/length histograms and the first frames of a few episodes, as PNG files."""
    from episode_warehouse.ted.open import open_ted_folder

    episodes = pq.read_table(Path(folder) / "episodes.parquet")
    if not episodes.num_rows:
        return
    out = Path(folder) / REPORT
    out.mkdir(exist_ok=True)
    (out / "distributions.png").write_bytes(distributions_png(episodes))
    td = open_ted_folder(folder)
    obs = td.get("observation")
    if hasattr(obs, "keys"):  # OpenX and LeRobot: the first camera (keys may nest)
        cameras = [k for k in obs.keys(True, True) if obs.get(k).ndim == 4]
        if not cameras:
            return  # no camera: the distributions only
        obs = obs.get(cameras[0])
    starts = episodes.column("start").to_numpy()[:thumbnails]
    (out / "first_frames.png").write_bytes(thumbnails_png([obs[int(s)].numpy() for s in starts]))


def read_ted_report(folder: Path) -> dict[str, bytes]:
    """The pictures written by :func:`write_ted_report` (empty for an empty TED)."""
    out = Path(folder) / REPORT
    return {
        name: (out / f"{name}.png").read_bytes()
        for name in PICTURES
        if (out / f"{name}.png").is_file()
    }
