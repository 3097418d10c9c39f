"""Benchmark: what the episode viewer's requests cost against reading the same data directly.

On a built warehouse (default: the demo's), through the viewer's own routes in-process
(starlette's test client, so no socket time is counted):

- an episode page (``/api/episode``: rows, series, flags, tasks) against the baseline of
  ``open_ted`` plus reading that episode's action and reward rows;
- a frame (``/api/frame``: the lossless PNG of a TED row) against encoding the same row with
  ``frame_png`` alone, and as frames/s against the partition's fps (real time = 1x).

    ./warehouse demo && python -m bench.viewer [--root demo-data/warehouse] [--source atari]
        [--partition Pong/1] [--episode 1]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from bench.measure import median_ms, save_report
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import open_ted
from episode_warehouse.ted.cameras import camera_leaves, declared_images
from episode_warehouse.viewer.app import build_app
from episode_warehouse.viewer.frames import frame_png
from episode_warehouse.viewer.partition import PartitionTed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        default=None,
        help="a warehouse root (default: ./demo-data/warehouse where the demo ran, else the "
        "Atari TED bench.loading builds)",
    )
    parser.add_argument("--source", default="atari")
    parser.add_argument("--partition", default="Pong/1")
    parser.add_argument("--episode", type=int, default=1)
    args = parser.parse_args()
    if args.root is None:
        from pathlib import Path

        from bench.loading import prepared

        demo = Path("demo-data/warehouse")
        args.root = str(demo if demo.is_dir() else prepared() / "root")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's note on its test client's httpx
        from starlette.testclient import TestClient

    layout = WarehouseLayout.from_root(args.root)
    client = TestClient(build_app(layout.root), base_url="http://127.0.0.1")  # loopback only
    ted = PartitionTed(layout.root, args.source, args.partition)
    span = ted.span(args.episode)
    query = {"source": args.source, "partition": args.partition, "episode": args.episode}

    def direct_episode():
        td = open_ted(args.source, args.partition, root=args.root)
        rows = td[span.start : span.start + span.length]
        return rows["action"].numpy().tolist(), rows["next", "reward"].numpy().tolist()

    page_ms = median_ms(lambda: client.get("/api/episode", params=query).raise_for_status())
    direct_ms = median_ms(direct_episode)
    cameras = camera_leaves(ted.rows(args.episode), declared_images(ted.record))
    camera, (path, image_layout) = next(iter(cameras.items()))
    rows = ted.rows(args.episode).get(path)
    started = time.perf_counter()
    for t in range(span.length):
        client.get("/api/frame", params={**query, "t": t, "camera": camera}).raise_for_status()
    served_s = time.perf_counter() - started
    started = time.perf_counter()
    sizes = [len(frame_png(rows[t].numpy(), image_layout)) for t in range(span.length)]
    encode_s = time.perf_counter() - started
    fps = ted.record.fps or 10
    report = {
        "partition": f"{args.source}/{args.partition}", "episode": args.episode,
        "steps": span.length, "camera": camera,
        "episode_page_ms": page_ms, "direct_read_ms": direct_ms,
        "page_vs_direct": round(page_ms / direct_ms, 2),
        "frame_ms": round(1000 * served_s / span.length, 2),
        "encode_only_ms": round(1000 * encode_s / span.length, 2),
        "frame_vs_encode": round(served_s / encode_s, 2),
        "frames_per_s": round(span.length / served_s, 1), "fps": fps,
        "x_real_time": round(span.length / served_s / fps, 1),
        "mean_png_bytes": round(sum(sizes) / len(sizes)),
    }  # fmt: skip
    save_report("viewer", report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
