"""``warehouse demo``: fixtures -> GCS emulator -> every asset of every demo partition."""

from __future__ import annotations

import time
from pathlib import Path

from warehouse_cli.environment import cli_instance, default_dagster_home
from warehouse_fixtures.demo import (
    ATARI_RUNS,
    OPENX_DATASETS,
    RLU_RUNS,
    write_demo_fixtures,
)
from warehouse_fixtures.gcs_emulator import running_emulator, upload_tree

QUERY = """SELECT source, partition, count(*) AS episodes, sum(length) AS frames,
       round(avg("return"), 2) AS mean_return, sum(complete::INT) AS complete
FROM episodes GROUP BY ALL ORDER BY ALL"""


def demo_environment(folder: Path, summary: dict, endpoint: str) -> dict[str, str]:
    """The variables that point a Dagster process (``warehouse ui --demo``) at the demo."""
    return {
        "EPISODE_WAREHOUSE_ROOT": str(folder / "warehouse"),
        "ATARI_REPLAY_URL": summary["atari_url"],
        "OPENX_URL": str(folder / "fixtures" / "openx"),
        "STORAGE_EMULATOR_HOST": endpoint,
    }


DEMO_BUCKET_ROOT = "gs://demo-warehouse/wh"
STREAMED = """SELECT source, partition, episode, start, length FROM episodes
WHERE source = 'atari' AND partition = 'Pong/5' ORDER BY "return" DESC LIMIT 2"""


def demo_resources(
    folder: Path, summary: dict, endpoint: str, root: str | None = None
) -> dict[str, dict]:
    """The same settings as resource config, for runs in this process."""
    return {
        "warehouse": {"root": root or str(folder / "warehouse")},
        "atari_replay": {"url": summary["atari_url"], "emulator_host": endpoint},
        "openx_source": {"url": str(folder / "fixtures" / "openx")},
    }


def demo_partitions() -> list[tuple[str, str]]:
    """(source, partition) of every demo partition, in the order the demo builds them."""
    atari = [f"{r.game}/{r.run}" for r in ATARI_RUNS] + [f"{g}/{r}" for g, r, _ in RLU_RUNS]
    return [("atari", k) for k in atari] + [("openx", spec.name) for spec, _ in OPENX_DATASETS]


def run_demo(folder: Path, bucket: bool = False) -> int:
    from episode_warehouse.catalog import run_query
    from episode_warehouse.paths import WarehouseLayout
    from warehouse_cli.console import partition_line
    from warehouse_cli.output import print_table
    from warehouse_cli.runner import materialize_catalog, materialize_partition

    started = time.perf_counter()
    demo_root = DEMO_BUCKET_ROOT if bucket else str(folder / "warehouse")
    home = default_dagster_home(demo_root)
    instance = cli_instance(demo_root)
    if not (folder / "fixtures" / "fixtures.json").is_file():
        print("writing the demo fixtures (Dopamine and RL Unplugged Atari files, OpenX shards)")
    summary = write_demo_fixtures(folder / "fixtures")
    with running_emulator() as endpoint:
        upload_tree(endpoint, summary["bucket"], folder / "fixtures" / "atari-bucket")
        print(f"serving gs://{summary['bucket']} from a GCS emulator at {endpoint}")
        root = _bucket_root(folder, endpoint) if bucket else None
        resources = demo_resources(folder, summary, endpoint, root)
        for source, key in demo_partitions():
            t = time.perf_counter()
            result = materialize_partition(source, key, instance=instance, resources=resources)
            print(partition_line(source, key, result, time.perf_counter() - t), flush=True)
        materialize_catalog(instance=instance, resources=resources)
        if root is not None:
            print(f"\nDemo finished in {time.perf_counter() - started:.0f} s; the catalog, "
                  f"queried over {root}:\n")  # fmt: skip
            print_table(*run_query(WarehouseLayout.from_root(root).root, QUERY))
            _stream_from_bucket(root)
            return 0
    layout = WarehouseLayout.from_root(folder / "warehouse")
    print(
        f"\nDemo finished in {time.perf_counter() - started:.0f} s: warehouse in {layout.url}, "
        f"Dagster runs in {home}\n"
    )
    print_table(*run_query(layout.root, QUERY))
    print("\nNext:")
    print(
        f'  ./warehouse sql --root {layout.url} \'SELECT * FROM episodes ORDER BY "return" '
        "DESC LIMIT 5'"
    )
    print(
        '  .venv/bin/python -c "from episode_warehouse import open_ted; '
        f"print(open_ted('atari', 'Pong/5', root='{layout.url}'))\""
    )
    print(f"  ./warehouse view --root {layout.url}    # the episode viewer: http://127.0.0.1:8787")
    print(f"  ./warehouse ui --demo {folder}    # then open http://127.0.0.1:3000 (and the viewer)")
    return 0


def _bucket_root(folder: Path, endpoint: str) -> str:
    """Create the demo's warehouse bucket on the emulator and point this process at it."""
    import os

    from episode_warehouse.gcs import gcs_client

    client = gcs_client(endpoint)
    name = DEMO_BUCKET_ROOT.removeprefix("gs://").split("/")[0]
    if not client.bucket(name).exists():
        client.create_bucket(name)
    os.environ.update(
        STORAGE_EMULATOR_HOST=endpoint,
        EPISODE_WAREHOUSE_LOCAL_COPY=str(folder / "scratch"),
        EPISODE_WAREHOUSE_CACHE=str(folder / "cache"),
    )
    print(f"warehouse root {DEMO_BUCKET_ROOT} (stages build in {folder / 'scratch'})")
    return DEMO_BUCKET_ROOT


def _stream_from_bucket(root: str) -> None:
    """What a training node does: select with SQL, stream those episodes' byte ranges."""
    from episode_warehouse.incremental import published
    from episode_warehouse.loading import EpisodeStream, select_episodes
    from episode_warehouse.paths import WarehouseLayout

    selection = select_episodes(STREAMED, root)
    stream = EpisodeStream(selection, shuffle=False)
    frames = sum(ref.read().batch_size[0] for ref in stream)  # each slice read alone
    layout = WarehouseLayout.from_root(root)
    record = published(layout.root, layout.ted_dir("atari", "Pong/5"))
    files = record.extra["published"]["files"] if record is not None else {}
    size = sum(int(f["size"]) for f in files.values())
    print(
        f"\nStreamed the 2 best episodes of atari Pong/5 from {root}: {frames} frames, "
        f"{stream.cache.bytes_fetched / 1e6:.1f} MB fetched of the partition's "
        f"{size / 1e6:.1f} MB TED"
    )
