"""Mixtures: Octo's named mixes and any list or SQL selection of datasets with weights, turned
into sampling weights as ``make_interleaved_dataset`` does.

With ``balance=True`` (Octo's and OpenVLA's pretraining default) each weight is multiplied by
the dataset's ``num_transitions``, so equal weights mean one pass over each dataset per epoch
in expectation; then the weights are normalized to sum to 1.

Octo's mixes name its private bridge copy ``bridge_dataset``; here that entry means OXE's
``bridge`` (standardized as OpenVLA's ``bridge_oxe``).
"""

from __future__ import annotations

import logging
import re

from episode_warehouse.errors import ConfigError, NotMaterializedError
from episode_warehouse.guards.numbers import positive_weight
from episode_warehouse.sources import registry
from episode_warehouse.standardized.statistics import pool_statistics

log = logging.getLogger(__name__)

_RTX = [
    ("fractal20220817_data", 0.54087122203), ("kuka", 0.8341046294), ("bridge", 1.0),
    ("taco_play", 2.0), ("jaco_play", 2.0), ("berkeley_cable_routing", 3.0), ("roboturk", 1.0),
    ("nyu_door_opening_surprising_effectiveness", 5.0), ("viola", 2.0),
    ("berkeley_autolab_ur5", 1.0), ("toto", 1.0),
]  # fmt: skip
_FRANKA = [
    ("taco_play", 1.0), ("berkeley_cable_routing", 1.0), ("viola", 1.0), ("toto", 1.0),
    ("stanford_hydra_dataset_converted_externally_to_rlds", 1.0),
    ("austin_buds_dataset_converted_externally_to_rlds", 3.0),
    ("nyu_franka_play_dataset_converted_externally_to_rlds", 3.0),
    ("maniskill_dataset_converted_externally_to_rlds", 0.1),
    ("furniture_bench_dataset_converted_externally_to_rlds", 0.1),
    ("cmu_franka_exploration_dataset_converted_externally_to_rlds", 5.0),
    ("austin_sailor_dataset_converted_externally_to_rlds", 1.0),
    ("austin_sirius_dataset_converted_externally_to_rlds", 1.0),
    ("berkeley_rpt_converted_externally_to_rlds", 1.0),
    ("kaist_nonprehensile_converted_externally_to_rlds", 3.0),
    ("stanford_robocook_converted_externally_to_rlds", 1.0),
    ("iamlab_cmu_pickup_insert_converted_externally_to_rlds", 1.0),
    ("utaustin_mutex", 1.0), ("cmu_play_fusion", 1.0),
]  # fmt: skip
_MAGIC_SOUP = [
    ("fractal20220817_data", 0.54087122203), ("kuka", 0.8341046294), ("bridge", 1.0),
    ("taco_play", 2.0), ("jaco_play", 1.0), ("berkeley_cable_routing", 1.0), ("roboturk", 2.0),
    ("nyu_door_opening_surprising_effectiveness", 1.0), ("viola", 2.0),
    ("berkeley_autolab_ur5", 2.0), ("toto", 1.0), ("language_table", 0.1),
    ("stanford_hydra_dataset_converted_externally_to_rlds", 2.0),
    ("austin_buds_dataset_converted_externally_to_rlds", 1.0),
    ("nyu_franka_play_dataset_converted_externally_to_rlds", 3.0),
    ("furniture_bench_dataset_converted_externally_to_rlds", 0.1),
    ("ucsd_kitchen_dataset_converted_externally_to_rlds", 2.0),
    ("austin_sailor_dataset_converted_externally_to_rlds", 1.0),
    ("austin_sirius_dataset_converted_externally_to_rlds", 1.0), ("bc_z", 0.2),
    ("dlr_edan_shared_control_converted_externally_to_rlds", 1.0),
    ("iamlab_cmu_pickup_insert_converted_externally_to_rlds", 1.0), ("utaustin_mutex", 1.0),
    ("berkeley_fanuc_manipulation", 2.0), ("cmu_stretch", 1.0),
]  # fmt: skip
# Octo's oxe_flex_act_soup without the datasets that have no OXE folder (gnm_dataset, aloha_*,
# dobbe, roboset, rh20t): those are named in the warning like any other missing dataset
_FLEX_ACT_SOUP = _MAGIC_SOUP[:20] + [
    ("berkeley_mvp_converted_externally_to_rlds", 1.0),
    *_MAGIC_SOUP[20:],
    ("gnm_dataset", 1.0), ("aloha_static_dataset", 3.0), ("aloha_mobile_dataset", 2.0),
    ("dobbe", 1.0), ("roboset", 0.5), ("rh20t", 0.5),
]  # fmt: skip

NAMED_MIXES: dict[str, list[tuple[str, float]]] = {
    "bridge": [("bridge", 1.0)],
    "rtx": _RTX,
    "rtx_franka": _RTX + _FRANKA,
    "oxe_magic_soup": _MAGIC_SOUP,
    "oxe_flex_act_soup": _FLEX_ACT_SOUP,
}

Mix = str | list[tuple[str, float]]
# a mix given as SQL: a query's first keyword (DuckDB also reads FROM-first queries)
_SQL = re.compile(r"\s*(SELECT|WITH|FROM)\b", re.IGNORECASE)


def _entries(mix: Mix, root) -> list[tuple[str, str, float]]:
    """(source, partition, weight), duplicates dropped as Octo does (the first one stays)."""
    if isinstance(mix, str) and _SQL.match(mix):
        return _from_sql(mix, root)
    if isinstance(mix, str):
        if mix not in NAMED_MIXES:
            raise ConfigError(
                f"no named mix {mix!r}",
                subject="mixture",
                fix="use one of " + ", ".join(NAMED_MIXES) + ", a list of (dataset, weight), "
                "or a SQL selection with a weight column",
            )
        mix = NAMED_MIXES[mix]
    out, seen = [], set()
    for item in mix:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ConfigError(f"{item!r} is not a (dataset, weight) pair", subject="mixture")
        name, weight = item
        source, partition = name.split(":", 1) if ":" in name else ("openx", name)
        weight = positive_weight(weight, what=repr(name), subject="mixture")
        if (source, partition) in seen:
            log.warning("skipping the duplicate %s in the mixture", name)
            continue
        seen.add((source, partition))
        out.append((source, partition, weight))
    return out


def _from_sql(sql: str, root) -> list[tuple[str, str, float]]:
    """A SQL selection over the catalog with columns ``partition`` (and ``source``, default
    openx) and ``weight``; rows of one partition are one entry (the first weight)."""
    from episode_warehouse.catalog.query import run_query
    from episode_warehouse.storage import parse_root

    columns, values = run_query(parse_root(root), sql)
    names = set(columns)
    if not {"partition", "weight"} <= names:
        raise ConfigError(
            f"the selection's columns are {sorted(names)}; a mixture needs partition and weight",
            subject="mixture SQL",
            fix="e.g. SELECT DISTINCT source, partition, 1.0 AS weight FROM episodes "
            "WHERE source = 'openx'",
        )
    rows = [dict(zip(columns, v, strict=True)) for v in values]
    first = {(r.get("source") or "openx", r["partition"]): r for r in rows[::-1]}
    return [
        (source, str(partition),
         positive_weight(r["weight"], what=f"{source}:{partition}", subject="mixture SQL"))
        for (source, partition), r in first.items()
    ][::-1]  # fmt: skip


def resolve(mix: Mix, root=None) -> list[tuple[str, str, float, dict]]:
    """The mixture's standardized partitions with their weights and statistics; those not
    materialized are named in one warning and left out.

    A dataset built as shard ranges (``droid@00000-00031`` ...) is named by its dataset
    (``droid``): each of its standardized ranges is an entry, all with the dataset's weight
    and its statistics pooled from theirs (:func:`pool_statistics`: equal to the dataset's
    standardized whole), so normalization is the dataset's; an entry's share of its dataset
    is its ``num_transitions`` over the pool's (:func:`range_share`).

    Raises:
        ConfigError: an unknown mix, a malformed entry, or nothing left.
    """
    from episode_warehouse.standardized.reader import dataset_statistics, standardized_ranges

    groups: dict[str, list[tuple[str, str, float, dict]]] = {}
    missing = []
    for source, partition, weight in _entries(mix, root):
        try:
            parts = [(partition, dataset_statistics(source, partition, root))]
        except NotMaterializedError:
            ranges = standardized_ranges(source, partition, root)
            if not ranges:
                missing.append(registry.dataset_name(source, partition))
                continue
            parts = [(key, dataset_statistics(source, key, root)) for key in ranges]
        group = groups.setdefault(registry.dataset_name(source, partition), [])
        group.extend((source, key, weight, stats) for key, stats in parts)
    if missing:
        log.warning(
            "%d dataset(s) of the mixture are not standardized and are left out: %s",
            len(missing),
            ", ".join(missing),
        )
    if not groups:
        raise ConfigError(
            "the mixture is empty: none of its datasets is standardized here",
            subject=f"mixture {mix if isinstance(mix, str) else 'list'}",
            fix="./warehouse materialize openx DATASET --through standardized",
        )
    found: list[tuple[str, str, float, dict]] = []
    for name, group in groups.items():
        pooled = pool_statistics([stats for *_, stats in group], _columns(group, root))
        weight = group[0][2]
        if any(w != weight for _, _, w, _ in group):
            log.warning("%s: its ranges have different weights; all take the first, %s",
                        name, weight)  # fmt: skip
        found.extend((s, p, weight, {**pooled, "range_transitions": st["num_transitions"]})
                     for s, p, _, st in group)  # fmt: skip
    return found


def _columns(group: list[tuple[str, str, float, dict]], root) -> dict[str, list]:
    """The standardized action and state arrays of a dataset's ranges (memory-mapped; read
    only for a dataset of more than one range)."""
    from episode_warehouse.standardized.reader import locate

    if len(group) < 2:
        return {}
    opened = [locate(source, partition, root) for source, partition, _, _ in group]
    columns = {"action": [o.array("action") for o in opened]}
    if all(o.meta.state_dim for o in opened):
        columns["proprio"] = [o.array("state") for o in opened]
    return columns


def range_share(stats: dict) -> float:
    """The share of its dataset's transitions one :func:`resolve` entry holds (1 for a
    dataset that is one partition)."""
    return stats.get("range_transitions", stats["num_transitions"]) / max(
        1, stats["num_transitions"]
    )


def mixture_weights(mix: Mix, root=None, balance: bool = True) -> dict[str, float]:
    """``{partition: weight}`` summing to 1 (a non-OXE partition as ``source:partition``).

    ``mix``: a named mix (``NAMED_MIXES``), a list of ``(dataset, weight)``, or a SQL selection
    over the catalog with ``partition`` and ``weight`` columns.
    """
    return sampling_weights(resolve(mix, root), balance)


def sampling_weights(entries: list[tuple[str, str, float, dict]], balance: bool) -> dict:
    """``{name: weight}`` summing to 1 for :func:`resolve`'s entries (the one rule that
    :func:`mixture_weights`, ``VLADataset`` and the export share).

    Raises:
        ConfigError: the balanced datasets hold no transitions.
    """
    top = max(w for _, _, w, _ in entries)  # scaled first: 1e308 x transitions stays finite
    raw = {
        registry.dataset_name(s, p): w / top * (stats["num_transitions"] if balance else 1)
        for s, p, w, stats in entries
    }
    total = sum(raw.values())
    if total <= 0:  # every balanced dataset is empty
        raise ConfigError("the mixture's datasets hold no transitions", subject="mixture")
    return {name: value / total for name, value in raw.items()}
