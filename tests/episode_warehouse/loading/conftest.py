"""Two Atari partitions and one OpenX partition built with the domain functions (no Dagster)."""

from datetime import UTC, datetime

import numpy as np
import pytest

from episode_warehouse.atari.decode import decode_run
from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.rows import catalog_rows
from episode_warehouse.decoded import open_decoded
from episode_warehouse.fixtures.atari_game import play_episode
from episode_warehouse.fixtures.dopamine_writer import write_run
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import build_ted


def build_atari(root, key, seed, capacity=400, episodes=25):
    rng = np.random.default_rng(seed)
    raw = root / "raw-src" / key
    write_run(raw, [play_episode(rng, int(n)) for n in rng.integers(30, 160, episodes)],
              capacity, final_log=False, compresslevel=1)
    n = len(list(raw.glob("add_count_ckpt.*.gz")))
    layout = WarehouseLayout(root)
    dec, ted = layout.decoded_dir("atari", key), layout.ted_dir("atari", key)
    dec.mkdir(parents=True)
    ted.mkdir(parents=True)
    decode_run(raw, list(range(n)), dec, workers=1)
    build_ted(open_decoded(dec), ted)
    rows, part = catalog_rows(ted, "atari", key, code_version="t", run_id="r", data_version="d",
                              materialized_at=datetime.now(UTC))
    CatalogStore(layout.catalog_dir).publish_partition("atari", key, rows, part)


@pytest.fixture(scope="session")
def warehouse_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("loading") / "wh"
    build_atari(root, "Pong/1", 1)
    build_atari(root, "Pong/2", 2)
    return root
