"""The standardized stage: one call of the incremental rule per partition, rebuilt when the
TED, the transforms' version, the declared mapping or the code version change."""

from __future__ import annotations

from episode_warehouse.incremental import Built, build_if_changed
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.standardized.build import Plan, build_standardized
from episode_warehouse.standardized.configs import CONFIGS
from episode_warehouse.standardized.record import StandardizedRecord
from episode_warehouse.standardized.transforms import TRANSFORMS_VERSION, transform_of
from episode_warehouse.ted.reader import TedReader


def plan_for(layout: WarehouseLayout, source: str, partition: str, ted: TedReader) -> Plan:
    """OXE datasets take Octo's transform and config; any other partition its declared mapping.

    Raises:
        ConfigError: an OXE dataset Octo has no transform for, or a partition without a mapping.
    """
    if registry.get(source).octo_datasets:
        dataset = registry.get(source).dataset_of(partition)  # a shard range: its dataset's
        transform = transform_of(dataset)
        return Plan(ted, source, partition, dataset, transform, CONFIGS[dataset])
    from episode_warehouse.standardized.mapping import (
        mapped_config,
        mapped_transform,
        mapping_for,
    )
    from episode_warehouse.ted.cameras import declared_images, image_layout

    keys = ted.meta.keys
    td, declared = ted.whole(), declared_images(ted.meta)
    leaves = {"/".join((k,) if isinstance(k, str) else k): td.get(k) for k in td.keys(True, True)}
    cameras = {
        k for k, v in leaves.items()
        if k.split("/")[0] == "observation" and image_layout(tuple(k.split("/")[1:]), v, declared)
    }  # fmt: skip
    shapes = {k: tuple(v.shape[1:]) for k, v in leaves.items()}
    mapping = mapping_for(layout.root, source, partition, keys, shapes=shapes, cameras=cameras)
    name = registry.dataset_name(source, partition)
    return Plan(ted, source, partition, name, mapped_transform(mapping),
                mapped_config(mapping), mapping)  # fmt: skip


def build_standardized_stage(
    layout: WarehouseLayout, source: str, partition: str, *, code_version: str
) -> Built[StandardizedRecord]:
    """The standardized partition of ``source:partition`` (published atomically).

    Raises:
        NotMaterializedError: its TED is not built.
        ConfigError: no transform or mapping for it.
        CorruptInputError: a transform met a missing key, a NaN, or frames that are not a view.
    """
    reader = TedReader.of(layout.root, source, partition)  # the TED's files are not pulled
    ted = reader.meta
    plan = plan_for(layout, source, partition, reader)
    inputs = {
        "ted": ted.version,
        "transforms": TRANSFORMS_VERSION,
        "mapping": plan.mapping,
        "code_version": code_version,
        "format": StandardizedRecord.format_id(),
    }
    return build_if_changed(
        layout.root,
        layout.standardized_dir(source, partition),
        inputs,
        lambda tmp: build_standardized(plan, tmp, fps=ted.fps),
        record_type=StandardizedRecord,
        upstream={layout.ted_dir(source, partition): ted.version},
    )
