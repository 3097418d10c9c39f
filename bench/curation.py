"""Benchmark: what curation (#60) costs and how well duplicates are found.

1. **Audit cost**, same data, same run: the catalog stage (``publish_catalog_rows``) of a JPEG
   dataset (bench.frames' fractal20220817_data, 256x320 JPEG frames, ``--episodes`` x
   ``--steps``, encoded layout) with the integrity audit and the duplicate signatures, against
   the same stage without them (``curation=False``: the stage before #60). Rounds alternate; the
   best of each is kept. Also the audit and the signatures alone.
2. **Duplicates**, on the reaching robot (``warehouse_fixtures.curation_robot``): ``--distinct``
   distinct episodes of one task in one scene, ``--planted`` planted duplicates (a copy, a
   re-encoded copy, a copy started 3 steps late, in turn) and the first shard published again
   as another dataset, built through the real stages. Recall: planted pairs (and the
   re-published shard's pairs) found in one group; false positives: pairs of distinct
   episodes put in one group, over the distinct pairs. Cost per episode: the signatures at the
   catalog stage and the search, projected to DROID's 95,658 episodes (~290 steps, three
   cameras: the signatures scale with steps and cameras, the search with episodes).

    python -m bench.curation [--episodes 40] [--steps 40] [--rounds 3]
                             [--distinct 10000] [--planted 600]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.measure import save_report, scaled

DATA = Path(__file__).parent / "data" / "curation"
DROID_EPISODES, DROID_STEPS, DROID_CAMERAS = 95_658, 290, 3


def _jpeg_ted(episodes: int, steps: int) -> Path:
    """bench.frames' encoded fractal TED (built when missing)."""
    import os

    from bench import frames

    ted = frames.DATA / "encoded" / "ted" / "openx" / frames.NAME
    if not (ted / "meta.json").exists() or not (frames.DATA / f"src-{episodes}x{steps}").exists():
        src = frames._write_source(episodes, steps)
        os.environ["EPISODE_WAREHOUSE_FRAMES"] = "encoded"
        frames.child_build("encoded", str(src))
    return ted


def _stage(root: Path, name: str, curation: bool, round_: int) -> float:
    """Seconds of the catalog stage (``publish_catalog_rows``: the TED read, the rows built,
    written and published atomically), rebuilt (a new code version each round)."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages.catalog import publish_catalog_rows

    layout = WarehouseLayout.local(root)
    t = time.perf_counter()
    built = publish_catalog_rows(layout, "openx", name, code_version=f"bench-{round_}-{curation}",
                                 run_id="bench", curation=curation)  # fmt: skip
    assert built.rebuilt
    return time.perf_counter() - t


def audit_cost(episodes: int, steps: int, rounds: int) -> dict:
    from episode_warehouse.curation.audit import audit_partition
    from episode_warehouse.curation.partition_arrays import PartitionArrays
    from episode_warehouse.curation.signatures import signature_columns

    ted = _jpeg_ted(episodes, steps)
    root = ted.parents[2]
    _stage(root, ted.name, True, -1)  # warm the page cache and the imports
    best = {True: float("inf"), False: float("inf")}
    for r in range(rounds):
        for curation in (False, True):
            best[curation] = min(best[curation], _stage(root, ted.name, curation, r))
    arrays = PartitionArrays.open(ted)
    t = time.perf_counter()
    audit_partition(arrays, None)
    audit_s = time.perf_counter() - t
    t = time.perf_counter()
    signature_columns(arrays)
    signatures_s = time.perf_counter() - t
    return {
        "dataset": f"fractal20220817_data {episodes}x{steps}, 256x320 JPEG",
        "catalog_stage_s": round(best[False], 3),
        "with_curation_s": round(best[True], 3),
        "ratio": round(best[True] / best[False], 3),
        "audit_s": round(audit_s, 3),
        "signatures_s": round(signatures_s, 3),
        "frames": arrays.rows,
    }


def _build_reaching(distinct: int, planted: int) -> tuple[Path, dict]:
    import shutil

    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards
    from tests.helpers import _publish
    from warehouse_fixtures.curation_robot import write_reaching_with_copy

    shutil.rmtree(DATA, ignore_errors=True)
    t = time.perf_counter()
    pairs = write_reaching_with_copy(DATA / "src", distinct, planted, per_shard=500)
    write_s = time.perf_counter() - t
    layout = WarehouseLayout.local(DATA / "wh")
    t = time.perf_counter()
    for name in ("reach", "reach_copy"):
        shards = list_shards(str(DATA / "src"), name).shards
        _publish(layout, "openx", name, lambda dec, s=shards: decode_shards(s, dec), 0)
    return DATA / "wh", {"pairs": pairs, "write_s": write_s, "stages_s": time.perf_counter() - t}


def duplicates_quality(distinct: int, planted: int) -> dict:
    import pyarrow.parquet as pq

    from episode_warehouse.catalog import run_query
    from episode_warehouse.curation.partition_arrays import PartitionArrays
    from episode_warehouse.curation.signatures import signature_columns
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages.curation import publish_duplicates

    folder, built = _build_reaching(distinct, planted)
    layout = WarehouseLayout.local(folder)
    ted = layout.ted_dir("openx", "reach")
    arrays = PartitionArrays.open(ted)
    t = time.perf_counter()
    signature_columns(arrays)
    signature_s = time.perf_counter() - t
    steps = arrays.rows
    t = time.perf_counter()
    found = publish_duplicates(layout)
    search_s = time.perf_counter() - t
    _, rows = run_query(
        layout.root,
        "SELECT partition, episode, duplicate_group FROM episodes WHERE duplicate_group IS "
        "NOT NULL",
    )
    group = {(p, e): g for p, e, g in rows}
    copies = pq.read_table(layout.ted_dir("openx", "reach_copy") / "episodes.parquet").num_rows
    # every episode's identity: the distinct episode it is, or is a duplicate of
    identity = {("reach", e): e for e in range(distinct)}
    identity.update({("reach", d): o for v in built["pairs"].values() for o, d in v})
    identity.update({("reach_copy", e): identity[("reach", e)] for e in range(copies)})
    members: dict[int, list] = {}
    for key, e in identity.items():
        members.setdefault(e, []).append(key)
    want = [(m[0], other) for m in members.values() for other in m[1:]]
    same = lambda a, b: a in group and group[a] == group.get(b)  # noqa: E731
    recall = sum(same(a, b) for a, b in want) / len(want)
    per_kind = {k: sum(same(("reach", o), ("reach", d)) for o, d in v) / max(len(v), 1)
                for k, v in built["pairs"].items()}  # fmt: skip
    false_pairs = 0  # pairs of episodes of two identities in one group
    by_group: dict[str, list[int]] = {}
    for key, g in group.items():
        by_group.setdefault(g, []).append(identity[key])
    for ids in by_group.values():
        n = len(ids)
        counts: dict[int, int] = {}
        for i in ids:
            counts[i] = counts.get(i, 0) + 1
        false_pairs += n * (n - 1) // 2 - sum(c * (c - 1) // 2 for c in counts.values())
    n_all = len(identity)
    distinct_pairs = n_all * (n_all - 1) // 2 - len(want)
    episodes = found.meta.episodes
    sig_per_episode = signature_s / distinct  # (one camera, the reach lengths)
    per_step_camera = signature_s / steps
    search_per_episode = search_s / episodes
    droid_s = per_step_camera * DROID_STEPS * DROID_CAMERAS * DROID_EPISODES + (
        search_per_episode * DROID_EPISODES
    )
    return {
        "episodes": episodes,
        "distinct": distinct,
        "duplicate_pairs": len(want),
        "recall": round(recall, 4),
        "recall_by_kind": per_kind,
        "false_positive_pairs": false_pairs,
        "false_positive_rate": false_pairs / distinct_pairs,
        "write_s": round(built["write_s"], 1),
        "stages_s": round(built["stages_s"], 1),
        "signatures_ms_per_episode": round(1000 * sig_per_episode, 3),
        "search_s": round(search_s, 2),
        "search_ms_per_episode": round(1000 * search_per_episode, 4),
        "droid_projection_s_one_core": round(droid_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=scaled(40, 4))
    parser.add_argument("--steps", type=int, default=scaled(40, 10))
    parser.add_argument("--rounds", type=int, default=scaled(3, 1))
    parser.add_argument("--distinct", type=int, default=scaled(10_000, 200))
    parser.add_argument("--planted", type=int, default=scaled(600, 30))
    args = parser.parse_args()
    report = {
        "audit": audit_cost(args.episodes, args.steps, args.rounds),
        "duplicates": duplicates_quality(args.distinct, args.planted),
    }
    print(json.dumps(report, indent=1))
    save_report("curation", report)


if __name__ == "__main__":
    main()
