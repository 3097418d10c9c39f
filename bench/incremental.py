"""Benchmark: re-materializing an up-to-date Atari partition (raw -> catalog rows) against its
full materialization, in the same process, through the Dagster graph.

    python -m bench.incremental     # uses bench/data/atari-C100000-n3 as a local mirror
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.atari_decode import DATA, make_files
from bench.measure import save_report, scaled


def main() -> None:
    replay = make_files(scaled(100_000, 3000), scaled(3, 1))
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        mirror = Path(tmp) / "mirror" / "Pong" / "1" / "replay_logs"
        mirror.mkdir(parents=True)
        for f in replay.iterdir():  # hard links: a source folder's links are refused (#25)
            os.link(f, mirror / f.name)
        resources = {
            "atari_replay": {"url": str(Path(tmp) / "mirror")},
            "warehouse": {"root": str(Path(tmp) / "wh")},
        }
        import dagster as dg

        from warehouse_cli.runner import materialize_partition

        with dg.instance_for_test() as instance:
            t = time.perf_counter()
            materialize_partition(
                "atari", "Pong/1", through="catalog", instance=instance, resources=resources
            )
            full_s = time.perf_counter() - t
            t = time.perf_counter()
            result = materialize_partition(
                "atari", "Pong/1", through="catalog", instance=instance, resources=resources
            )
            noop_s = time.perf_counter() - t
        rebuilt = {
            e.asset_key.to_user_string(): e.metadata.get("rebuilt")
            for e in result.get_asset_materialization_events()
            for e in [e.materialization]
        }
        downloaded = (
            result.asset_materializations_for_node("atari_replay_files")[0]
            .metadata["downloaded"]
            .value
        )
    report = {
        "full_s": round(full_s, 2),
        "noop_s": round(noop_s, 2),
        "noop_fraction_of_full": round(noop_s / full_s, 3),
        "noop_downloaded_files": downloaded,
        "noop_rebuilt": {k: v.value if v is not None else None for k, v in rebuilt.items()},
    }
    print(json.dumps(report, indent=1))
    save_report("incremental", report)
    shutil.rmtree(DATA / "incremental", ignore_errors=True)


if __name__ == "__main__":
    main()
