"""``warehouse demo``: fixtures -> GCS emulator -> every asset of every demo partition."""

from __future__ import annotations

import time
from pathlib import Path

from episode_warehouse.fixtures.demo import (
    ATARI_RUNS,
    OPENX_DATASETS,
    RLU_RUNS,
    write_demo_fixtures,
)
from episode_warehouse.fixtures.gcs_emulator import running_emulator, upload_tree
from warehouse_cli.environment import cli_instance, default_dagster_home

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


def demo_resources(folder: Path, summary: dict, endpoint: str) -> dict[str, dict]:
    """The same settings as resource config, for runs in this process."""
    return {
        "warehouse": {"root": str(folder / "warehouse")},
        "atari_replay": {"url": summary["atari_url"], "emulator_host": endpoint},
        "openx_source": {"url": str(folder / "fixtures" / "openx")},
    }


def run_demo(folder: Path) -> int:
    from episode_warehouse.catalog import run_query
    from episode_warehouse.paths import WarehouseLayout
    from warehouse_cli.output import print_table
    from warehouse_cli.runner import materialize_partition

    started = time.perf_counter()
    home = default_dagster_home()
    instance = cli_instance()
    summary = write_demo_fixtures(folder / "fixtures")
    with running_emulator() as endpoint:
        upload_tree(endpoint, summary["bucket"], folder / "fixtures" / "atari-bucket")
        resources = demo_resources(folder, summary, endpoint)
        for key in [f"{r.game}/{r.run}" for r in ATARI_RUNS] + [f"{g}/{r}" for g, r, _ in RLU_RUNS]:
            t = time.perf_counter()
            materialize_partition("atari", key, instance=instance, resources=resources)
            print(f"atari {key}: done in {time.perf_counter() - t:.1f} s")
        for spec, _ in OPENX_DATASETS:
            t = time.perf_counter()
            materialize_partition("openx", spec.name, instance=instance, resources=resources)
            print(f"openx {spec.name}: done in {time.perf_counter() - t:.1f} s")
    layout = WarehouseLayout.from_root(folder / "warehouse")
    print(f"\nDemo finished in {time.perf_counter() - started:.0f} s.")
    print(f"  warehouse:  {layout.root}  (raw/, decoded/, ted/, catalog/, lerobot/)")
    print(f"  catalog:    {layout.catalog_dir / 'catalog.duckdb'}")
    print(f"  dagster:    DAGSTER_HOME={home}\n")
    print_table(*run_query(layout.catalog_dir, QUERY))
    print("\nNext:")
    print(
        f'  ./warehouse sql --root {layout.root} \'SELECT * FROM episodes ORDER BY "return" '
        "DESC LIMIT 5'"
    )
    print(
        '  .venv/bin/python -c "from episode_warehouse import open_ted; '
        f"print(open_ted('atari', 'Pong/5', root='{layout.root}'))\""
    )
    print(f"  ./warehouse ui --demo {folder}    # then open http://127.0.0.1:3000")
    return 0
