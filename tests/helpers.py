"""Build partitions with the domain functions only (no Dagster), for domain-level tests."""

from datetime import UTC, datetime

import numpy as np

from episode_warehouse.atari.decode import decode_run
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.rows import catalog_rows
from episode_warehouse.decoded import open_decoded
from episode_warehouse.fixtures.atari_game import play_episode
from episode_warehouse.fixtures.dopamine_writer import write_run
from episode_warehouse.fixtures.openx_writer import DatasetSpec, write_dataset
from episode_warehouse.openx.decode import decode_shards
from episode_warehouse.openx.shards import list_shards
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import build_ted


def _publish(root, source, key, decode):
    layout = WarehouseLayout(root)
    dec, ted = layout.decoded_dir(source, key), layout.ted_dir(source, key)
    dec.mkdir(parents=True)
    ted.mkdir(parents=True)
    decode(dec)
    build_ted(open_decoded(dec), ted)
    rows, part = catalog_rows(
        ted,
        source,
        key,
        code_version="t",
        run_id="r",
        data_version="d",
        materialized_at=datetime.now(UTC),
    )
    CatalogStore(layout.catalog_dir).publish_partition(source, key, rows, part)


def build_atari(root, key, seed, capacity=400, episodes=25, lengths=(30, 160)):
    rng = np.random.default_rng(seed)
    raw = root / "raw-src" / key
    write_run(
        raw,
        [play_episode(rng, int(n)) for n in rng.integers(*lengths, episodes)],
        capacity,
        final_log=False,
        compresslevel=1,
    )
    n = len(list(raw.glob("add_count_ckpt.*.gz")))
    _publish(root, "atari", key, lambda dec: decode_run(raw, list(range(n)), dec, workers=1))


def build_openx(root, spec: DatasetSpec, shards, seed=0):
    mirror = root / "openx-src"
    episodes = write_dataset(mirror, spec, shards, seed=seed)
    _publish(
        root,
        "openx",
        spec.name,
        lambda dec: decode_shards(list_shards(str(mirror), spec.name).shards, dec),
    )
    return episodes
