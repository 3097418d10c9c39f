"""``bench.droid_scale``'s control-plane parts (#59): the 2,048-shard fixture, the source
sensor's tick over it (folder and ``gs://`` bucket), and the partition sets in Dagster.

- fixture: ``warehouse_fixtures.droid_scale`` at DROID's shard count, ``--per-shard`` episodes
  a shard (written once under ``bench/data/droid_scale_shards``): seconds and bytes;
- sensor: the openx source sensor as the daemon runs it (``OPENX_SHARD_RANGES=droid=32``):
  the first tick (every range requested), an unchanged tick (skipped), and a tick after one
  shard is rewritten (its one range requested); from the folder, then from the emulator
  bucket the folder was uploaded to; and the tick with single-shard ranges (2,048 partitions);
- partitions: adding the 64 (and 2,048) range keys as dynamic partitions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.measure import environment

DATA = Path(__file__).parent / "data"
RANGE = 32


def shards_folder(shards: int, per_shard: int) -> tuple[Path, dict]:
    """The fixture's folder (``<folder>/droid/1.0.1``), written once, and how it was written."""
    import json

    from warehouse_fixtures.droid_scale import write_droid_scale

    folder = DATA / f"droid_scale_shards-{shards}x{per_shard}"
    done = folder / "done.json"
    if done.exists():
        return folder, json.loads(done.read_text())
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    written = write_droid_scale(folder, shards=shards, per_shard=per_shard)
    facts = {
        "shards": written.shards,
        "episodes": written.episodes,
        "steps": written.steps,
        "successes": written.successes,
        "bytes": written.bytes,
        "write_s": written.seconds,
        "processes": os.cpu_count(),
    }
    done.write_text(json.dumps(facts))
    return folder, facts


def _tick(instance, cursor):
    import dagster as dg

    from assets.location import build_resources
    from sensors.sources import SOURCE_SENSORS

    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources=build_resources())
    started = time.perf_counter()
    result = SOURCE_SENSORS["openx"](ctx)
    return time.perf_counter() - started, result


def _rewrite_one_shard(write, shards: int, index: int) -> str:
    """Rewrite shard ``index`` with another episode (``write(name, data)``); its range key."""
    from warehouse_fixtures import rlds_writer as w
    from warehouse_fixtures.droid import NAME, droid_episode, features
    from warehouse_fixtures.droid_scale import TINY

    record = droid_episode(10**7 + index, size=TINY, length=40).record
    data = w.frame_record(w.serialize_episode(features(*TINY), record))
    write(w.shard_name(w.TEMPLATE, NAME, "train", index, shards), data)
    first = index // RANGE * RANGE
    return f"droid@{first:05d}-{first + RANGE - 1:05d}"


def ticks(url: str, write, shards: int, per_range: int = RANGE) -> dict:
    """The sensor's ticks over ``url`` (first, unchanged, one shard rewritten)."""
    import dagster as dg

    out: dict = {}
    with (
        environment(OPENX_URL=url, OPENX_SHARD_RANGES=f"droid={per_range}"),
        dg.instance_for_test() as inst,
    ):  # noqa: E501
        first_s, first = _tick(inst, None)
        keys = [r.partition_key for r in first.run_requests]
        out["first_tick_s"] = round(first_s, 2)
        out["ranges_requested"] = len(keys)
        started = time.perf_counter()
        inst.add_dynamic_partitions("openx", keys)
        out["add_partitions_s"] = round(time.perf_counter() - started, 2)
        same_s, same = _tick(inst, first.cursor)
        out["unchanged_tick_s"] = round(same_s, 2)
        out["unchanged_requests"] = 0 if isinstance(same, dg.SkipReason) else len(same.run_requests)
        if per_range == RANGE:
            changed_key = _rewrite_one_shard(write, shards, shards // 2 + 1)
            changed_s, changed = _tick(inst, first.cursor)
            out["changed_tick_s"] = round(changed_s, 2)
            out["changed_requests"] = [r.partition_key for r in changed.run_requests]
            out["changed_expected"] = [changed_key]
    return out


def sensor_part(folder: Path, shards: int) -> dict:
    """Ticks from the folder, from the emulator bucket, and with single-shard ranges."""
    from warehouse_fixtures.gcs_emulator import emulator_env, emulator_process, upload_tree

    version = folder / "droid" / "1.0.1"
    report: dict = {}
    originals: dict[str, bytes] = {}

    def write_file(name: str, data: bytes) -> None:
        originals.setdefault(name, (version / name).read_bytes())
        (version / name).write_bytes(data)

    report["folder"] = ticks(str(folder), write_file, shards)
    for name, data in originals.items():  # the fixture stays as written, for the other parts
        (version / name).write_bytes(data)
    report["folder_single_shard_ranges"] = ticks(str(folder), write_file, shards, per_range=1)
    with emulator_process(threaded=True) as endpoint, emulator_env(endpoint):
        started = time.perf_counter()
        uploaded = upload_tree(endpoint, "droid-scale", folder, prefix="openx")
        upload_s = time.perf_counter() - started
        bucket = _bucket(endpoint, "droid-scale")

        def write_object(name: str, data: bytes) -> None:
            bucket.blob(f"openx/droid/1.0.1/{name}").upload_from_string(data)

        report["bucket"] = {"objects": uploaded, "upload_s": round(upload_s, 1)} | ticks(
            "gs://droid-scale/openx", write_object, shards
        )
    return report


def _bucket(endpoint: str, name: str):
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(
        project="episode-warehouse",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": endpoint},
    )
    return client.bucket(name)


# -- the backfill of every range on the local cluster ------------------------------------------

_PARTITIONS_PAGE = """
query AssetPartitions($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode {
      partitionKeysByDimension { name partitionKeys }
      partitionStats { numMaterialized numPartitions numFailed numMaterializing }
      assetPartitionStatuses {
        ... on DefaultPartitionStatuses {
          materializedPartitions failedPartitions unmaterializedPartitions materializingPartitions
        }
      }
    }
  }
}"""
_BACKFILL_PAGE = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill {
      id status numPartitions
      partitionStatuses { results { id partitionName runId runStatus } }
      assetBackfillData {
        assetBackfillStatuses {
          ... on AssetPartitionsStatusCounts {
            assetKey { path } numPartitionsTargeted numPartitionsInProgress
            numPartitionsMaterialized numPartitionsFailed
          }
        }
      }
    }
  }
}"""


def _page_s(webserver: str, query: str, variables: dict) -> float:
    from warehouse_cli.cluster.backfill import _graphql

    started = time.perf_counter()
    answer = _graphql(webserver, query, variables)
    if not any(answer.values()):
        raise RuntimeError(f"the page's query answered nothing: {answer}")
    return time.perf_counter() - started


def _tree_rss_mb(pid: int) -> tuple[float, float]:
    """(the process's RSS, with its children's) in MB."""
    import psutil

    try:
        proc = psutil.Process(pid)
        own = proc.memory_info().rss
        children = sum(c.memory_info().rss for c in proc.children(recursive=True))
    except psutil.Error:
        return 0.0, 0.0
    return own / 2**20, (own + children) / 2**20


def single_shard_pages(instance, webserver: str, shards: int) -> dict:
    """The partition set of single-shard partitions (``droid@00000-00000`` ...) added beside
    the ranges, and the asset's partitions page over all of them."""
    keys = [f"droid@{i:05d}-{i:05d}" for i in range(shards)]
    started = time.perf_counter()
    instance.add_dynamic_partitions("openx", keys)
    added = time.perf_counter() - started
    page = _page_s(webserver, _PARTITIONS_PAGE, {"key": {"path": ["openx_ted"]}})
    return {
        "single_shard_partitions_added": len(keys),
        "single_shard_add_s": round(added, 2),
        "partitions_page_with_single_shard_partitions_s": round(page, 2),
    }


def cluster_part(
    folder: Path, shards: int, root: Path, workers: int = 2, timeout_s: float = 3600
) -> dict:
    """Every range backfilled through the catalog on a fresh local cluster: wall time, runs,
    the daemon's and webserver's RSS (sampled every 2 s), the UI's pages timed as it runs.
    The warehouse it builds stays at ``root`` (the loaders' part reads it)."""
    import shutil
    import tempfile
    import threading

    from warehouse_cli.cluster import backfill, services
    from warehouse_cli.runner import stage_assets

    keys = [f"droid@{f:05d}-{f + RANGE - 1:05d}" for f in range(0, shards, RANGE)]
    cluster = Path(tempfile.mkdtemp(prefix="bench-droid-scale-cluster-"))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env |= {"OPENX_URL": str(folder), "OPENX_SHARD_RANGES": f"droid={RANGE}",
            "EPISODE_WAREHOUSE_ROOT": str(root), "EPISODE_WAREHOUSE_WORKERS": "1"}  # fmt: skip
    peaks = {"daemon": [0.0, 0.0], "webserver": [0.0, 0.0]}
    pages: dict[str, list[float]] = {"partitions": [], "backfill": []}
    stop = threading.Event()
    try:
        state = services.up(cluster, workers=workers, env=env)
        instance = services.open_instance(cluster)
        pids = {name: state["services"][name] for name in peaks}

        def sample() -> None:
            while not stop.is_set():
                for name, pid in pids.items():
                    own, tree = _tree_rss_mb(pid)
                    peaks[name] = [max(peaks[name][0], own), max(peaks[name][1], tree)]
                stop.wait(2)

        started = time.perf_counter()
        backfill_id = backfill.submit(
            instance, state["webserver"], "openx", keys, stage_assets("openx", "catalog")
        )
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        def visit() -> None:  # the pages a user opens while it runs, every 20 s
            while not stop.wait(20):
                pages["partitions"].append(
                    _page_s(state["webserver"], _PARTITIONS_PAGE, {"key": {"path": ["openx_ted"]}})
                )
                pages["backfill"].append(
                    _page_s(state["webserver"], _BACKFILL_PAGE, {"id": backfill_id})
                )

        visitor = threading.Thread(target=visit, daemon=True)
        visitor.start()
        outcomes = backfill.wait(instance, backfill_id, keys, lambda _: None, 2.0, timeout_s)
        wall = time.perf_counter() - started
        stop.set()
        visitor.join(timeout=60)
        after = {
            "partitions": _page_s(
                state["webserver"], _PARTITIONS_PAGE, {"key": {"path": ["openx_catalog_rows"]}}
            ),
            "backfill": _page_s(state["webserver"], _BACKFILL_PAGE, {"id": backfill_id}),
        }
        single = single_shard_pages(instance, state["webserver"], shards)
        from episode_warehouse.catalog import run_query
        from episode_warehouse.storage.local import LocalRoot

        _, ((episodes, steps),) = run_query(
            LocalRoot(root), "SELECT count(*), sum(length) FROM episodes WHERE dataset = 'droid'"
        )
        return {
            "ranges": len(keys),
            "workers": workers,
            "backfill_s": round(wall, 1),
            "succeeded": sum(o.status == "SUCCESS" for o in outcomes),
            "runs": sum(o.runs for o in outcomes),
            "catalog_episodes": int(episodes),
            "catalog_steps": int(steps),
            "daemon_rss_peak_mb": round(peaks["daemon"][0]),
            "daemon_tree_rss_peak_mb": round(peaks["daemon"][1]),
            "webserver_rss_peak_mb": round(peaks["webserver"][0]),
            "webserver_tree_rss_peak_mb": round(peaks["webserver"][1]),
            "partitions_page_s_max": round(max(pages["partitions"] + [after["partitions"]]), 2),
            "backfill_page_s_max": round(max(pages["backfill"] + [after["backfill"]]), 2),
            "pages_visited": len(pages["partitions"]) + 1,
            **single,
        }
    finally:
        stop.set()
        services.down(cluster, drain_s=5)
        shutil.rmtree(cluster, ignore_errors=True)
