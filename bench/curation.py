"""Benchmark: what curation (#60) costs and how well duplicates are found.

1. **Audit cost**, same data, same run: the catalog stage (``publish_catalog_rows``) of a JPEG
   dataset (bench.frames' fractal20220817_data, 256x320 JPEG frames, ``--episodes`` x
   ``--steps``, encoded layout) with the integrity audit and the duplicate signatures, against
   the same stage without them (``curation=False``: the stage before #60). Rounds alternate; the
   best of each is kept. Also the audit and the signatures alone.
2. **Duplicates**, on the reaching robot (``warehouse_fixtures.curation_robot``): ``--distinct``
   distinct episodes of one task in one scene, ``--planted`` planted duplicates (a copy, a
   re-encoded copy, a copy started 3 steps late, in turn), ``--lookalikes`` planted look-alikes
   that are not copies (the same trajectory in another scene, the same recording with another
   instruction), ``--chains`` chains of 5 cuts of one recording (neighbours share 60% of their
   steps, the ends none), and the first shard published again as another dataset, built
   through the real stages. Recall: planted duplicates (and the re-published shard's episodes,
   and chain links) dropped for an episode they truly resemble; wrongly dropped: any episode
   dropped for one it does not resemble (a look-alike, a chain's far link, a distinct one), the
   goal 0. Cost per episode: the signatures at the catalog stage and the search, projected to
   DROID's 95,658 episodes (~290 steps, three cameras).
3. **The search at scale** (``find_duplicates`` over signatures, no stages): ``--identical``
   identical episodes, and ``--colliding`` distinct ones sharing one band (the old search listed
   every pair of a bucket: 4,000 identical episodes took 198 s, 4,000 colliding 75 s): seconds
   and peak traced memory.

    python -m bench.curation [--episodes 40] [--steps 40] [--rounds 3] [--distinct 10000]
                             [--planted 600] [--lookalikes 400] [--chains 100]
                             [--identical 100000] [--colliding 4000]
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


def _build_reaching(distinct: int, planted: int, lookalikes: int, chains: int):
    import shutil

    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards
    from tests.helpers import _publish
    from warehouse_fixtures.curation_robot import write_reaching_with_copy

    shutil.rmtree(DATA, ignore_errors=True)
    t = time.perf_counter()
    pairs = write_reaching_with_copy(DATA / "src", distinct, planted, per_shard=500,
                                     lookalikes=lookalikes, chains=chains)  # fmt: skip
    write_s = time.perf_counter() - t
    layout = WarehouseLayout.local(DATA / "wh")
    t = time.perf_counter()
    for name in ("reach", "reach_copy"):
        shards = list_shards(str(DATA / "src"), name).shards
        _publish(layout, "openx", name, lambda dec, s=shards: decode_shards(s, dec), 0)
    return DATA / "wh", {"pairs": pairs, "write_s": write_s, "stages_s": time.perf_counter() - t}


def _truth(pairs: dict, distinct: int, copies: int) -> tuple:
    """What each episode is: (identity of its steps and look, and for chains the recording and
    the step range it covers), from how the fixture wrote it."""
    from warehouse_fixtures.curation_robot import KINDS, LINK

    same: dict[tuple[str, int], int] = {("reach", e): e for e in range(distinct)}
    for kind in KINDS:  # a copy is its original
        for original, duplicate in pairs[kind]:
            same[("reach", duplicate)] = original
    for kind in ("other_scene", "other_instruction"):  # a look-alike is its own
        for _, twin in pairs[kind]:
            same[("reach", twin)] = -twin - 1
    cuts = {}
    step = LINK // 4
    for c, chain in enumerate(pairs["chain"]):
        for k, link in enumerate(chain):
            cuts[("reach", link)] = (c, k * step, k * step + LINK)
    for e in range(copies):  # the first shard again, as another dataset
        if ("reach", e) in cuts:
            cuts[("reach_copy", e)] = cuts[("reach", e)]
        else:
            same[("reach_copy", e)] = same[("reach", e)]
    return same, cuts


def _resembles(a, b, same, cuts) -> bool:
    if a in cuts and b in cuts:
        (ca, sa, ea), (cb, sb, eb) = cuts[a], cuts[b]
        if ca != cb:
            return False
        shared = max(0, min(ea, eb) - max(sa, sb))
        return shared / (max(ea, eb) - min(sa, sb)) >= 0.5
    return a in same and b in same and same[a] == same[b]


def duplicates_quality(distinct: int, planted: int, lookalikes: int, chains: int) -> dict:
    import pyarrow.parquet as pq

    from episode_warehouse.catalog import run_query
    from episode_warehouse.curation.partition_arrays import PartitionArrays
    from episode_warehouse.curation.signatures import signature_columns
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.stages.curation import publish_duplicates

    folder, built = _build_reaching(distinct, planted, lookalikes, chains)
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
    _, rows = run_query(layout.root, "SELECT partition, episode, near_duplicate_of FROM episodes")
    near = {(p, e): of for p, e, of in rows}
    copies = pq.read_table(layout.ted_dir("openx", "reach_copy") / "episodes.parquet").num_rows
    same, cuts = _truth(built["pairs"], distinct, copies)

    def parse(name: str) -> tuple[str, int]:
        partition, e = name.split("/", 1)[1].rsplit("#", 1)
        return partition, int(e)

    expected = [k for k in near if k[0] == "reach_copy"]  # copies across datasets
    expected += [("reach", d) for kind in ("republished", "reencoded", "shifted")
                 for _, d in built["pairs"][kind]]  # fmt: skip
    chain_found = chain_links = 0
    for chain in built["pairs"]["chain"]:
        for link in chain[1:]:  # a link whose earlier neighbour is kept should go
            chain_links += 1
            of = near.get(("reach", link))
            chain_found += of is not None and _resembles(("reach", link), parse(of), same, cuts)
    dropped = [(k, parse(of)) for k, of in near.items() if of is not None]
    wrong = [(k, of) for k, of in dropped if not _resembles(k, of, same, cuts)]
    recall_pairs = sum(near.get(k) is not None for k in expected)
    per_kind = {kind: sum(near.get(("reach", d)) is not None for _, d in v) / max(len(v), 1)
                for kind, v in built["pairs"].items() if kind != "chain"}  # fmt: skip
    episodes = found.meta.episodes
    sig_per_episode = signature_s / max(distinct, 1)
    per_step_camera = signature_s / steps
    search_per_episode = search_s / episodes
    droid_s = per_step_camera * DROID_STEPS * DROID_CAMERAS * DROID_EPISODES + (
        search_per_episode * DROID_EPISODES
    )
    return {
        "episodes": episodes,
        "distinct": distinct,
        "planted_duplicates": len(expected),
        "lookalikes": lookalikes,
        "chains": chains,
        "recall": round((recall_pairs + chain_found) / max(len(expected) + chain_links, 1), 4),
        "recall_planted_and_copies": round(recall_pairs / max(len(expected), 1), 4),
        "chain_links_dropped_for_a_neighbour": f"{chain_found}/{chain_links}",
        "dropped_by_kind": per_kind,
        "wrongly_dropped": len(wrong),
        "wrongly_dropped_examples": [f"{a} for {b}" for a, b in wrong[:5]],
        "write_s": round(built["write_s"], 1),
        "stages_s": round(built["stages_s"], 1),
        "signatures_ms_per_episode": round(1000 * sig_per_episode, 3),
        "search_s": round(search_s, 2),
        "search_ms_per_episode": round(1000 * search_per_episode, 4),
        "droid_projection_s_one_core": round(droid_s, 1),
    }


def search_scale(identical: int, colliding: int) -> dict:
    """``find_duplicates`` over ``identical`` equal signatures, and over ``colliding`` distinct
    ones sharing one band: seconds and peak traced memory of each."""
    import tracemalloc

    import numpy as np

    from episode_warehouse.curation.duplicates import EpisodeSignatures, find_duplicates

    rng = np.random.default_rng(0)
    out = {}
    same = rng.integers(-(2**62), 2**62, 64).tolist()
    other = rng.integers(-(2**62), 2**62, (colliding, 64))
    other[:, :2] = 7
    cases = {
        "identical": ([same] * identical, identical),
        "colliding_band": (other.tolist(), colliding),
    }
    for name, (minhashes, n) in cases.items():
        signatures = EpisodeSignatures([f"e{i}" for i in range(n)],
                                       [f"h{i}" for i in range(n)], minhashes)  # fmt: skip
        tracemalloc.start()
        t = time.perf_counter()
        table = find_duplicates(signatures)
        seconds = time.perf_counter() - t
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        kept = table.column("near_duplicate_of").null_count
        out[name] = {"episodes": n, "seconds": round(seconds, 2),
                     "peak_traced_mb": round(peak / 2**20, 1), "kept": kept}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=scaled(40, 4))
    parser.add_argument("--steps", type=int, default=scaled(40, 10))
    parser.add_argument("--rounds", type=int, default=scaled(3, 1))
    parser.add_argument("--distinct", type=int, default=scaled(10_000, 200))
    parser.add_argument("--planted", type=int, default=scaled(600, 30))
    parser.add_argument("--lookalikes", type=int, default=scaled(400, 10))
    parser.add_argument("--chains", type=int, default=scaled(100, 4))
    parser.add_argument("--identical", type=int, default=scaled(100_000, 2_000))
    parser.add_argument("--colliding", type=int, default=scaled(4_000, 500))
    args = parser.parse_args()
    report = {
        "audit": audit_cost(args.episodes, args.steps, args.rounds),
        "duplicates": duplicates_quality(
            args.distinct, args.planted, args.lookalikes, args.chains
        ),  # fmt: skip
        "search_scale": search_scale(args.identical, args.colliding),
    }
    print(json.dumps(report, indent=1))
    save_report("curation", report)


if __name__ == "__main__":
    main()
