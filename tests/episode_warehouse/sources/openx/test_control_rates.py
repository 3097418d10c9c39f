"""Control rates are known or empty, never guessed (#57 item 3): DROID records at 15 Hz
(its dataset page; the OXE spreadsheet has no DROID row), and an OXE dataset the table of rates
does not know has a NULL fps in the catalog and a warning, not the 10 Hz it used to be given."""

from __future__ import annotations

import logging

import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.paths import WarehouseLayout
from tests.helpers import build_openx_stages, build_oxe_standardized
from warehouse_fixtures.droid import write_droid

pytestmark = pytest.mark.integration


def test_droid_runs_at_15_hz_in_the_catalog_the_ted_and_vla_batches(tmp_path):
    from episode_warehouse import open_ted
    from episode_warehouse.standardized import VLADataset
    from episode_warehouse.standardized.stage import build_standardized_stage
    from episode_warehouse.ted.reader import TedReader

    write_droid(tmp_path / "src", shards=2, per_shard=1)
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx_stages(layout, tmp_path / "src", "droid@00000-00001")
    build_standardized_stage(layout, "openx", "droid@00000-00001", code_version="t")
    _, rows = run_query(layout.root, "SELECT DISTINCT fps FROM partitions")
    assert rows == [(15.0,)]
    assert TedReader.of(layout.root, "openx", "droid@00000-00001").meta.fps == 15
    assert open_ted("openx", "droid", layout.folder).batch_size[0] > 0
    metadata = VLADataset([("droid", 1.0)], layout.folder, num_samples=1, seed=0).metadata()
    assert metadata["droid"].control_frequency_hz == 15.0


def test_a_dataset_without_a_known_rate_gets_null_and_a_warning(tmp_path, caplog):
    name = "austin_buds_dataset_converted_externally_to_rlds"  # not in the table of rates
    caplog.set_level(logging.WARNING, "episode_warehouse.sources.registry")
    build_oxe_standardized(WarehouseLayout.local(tmp_path / "wh"), name, [5, 6])
    _, rows = run_query(WarehouseLayout.local(tmp_path / "wh").root,
                        "SELECT partition, fps FROM partitions")  # fmt: skip
    assert rows == [(name, None)]
    assert any("control rate of openx " + name in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "text",
    ["droid=0", "droid=-1", "droid", "droid=ten", "droid=\u0663",
     "toy=1" + "0" * 400,  # parsed to inf, failed later without naming the setting (#69)
     "toy=" + "9" * 300, "toy=20000"],
)  # fmt: skip
def test_a_stated_rate_is_a_positive_number_per_dataset(text):
    from episode_warehouse.errors import ConfigError
    from episode_warehouse.sources.openx.datasets import parse_rate_setting

    assert parse_rate_setting("toy_robot=10, other=2.5") == {"toy_robot": 10.0, "other": 2.5}
    with pytest.raises(ConfigError, match="OPENX_CONTROL_HZ entry .* is not dataset=Hz"):
        parse_rate_setting(text)


def test_a_dataset_named_twice_is_refused():
    """(#69) it silently took the last value."""
    from episode_warehouse.errors import ConfigError
    from episode_warehouse.sources.openx.datasets import parse_rate_setting
    from episode_warehouse.sources.openx.shard_ranges import parse_range_setting

    with pytest.raises(ConfigError, match="OPENX_CONTROL_HZ names droid twice"):
        parse_rate_setting("droid=15,droid=10")
    with pytest.raises(ConfigError, match="OPENX_SHARD_RANGES names droid twice"):
        parse_range_setting("droid=32,droid=64")
    with pytest.raises(ConfigError, match="OPENX_SHARD_RANGES entry .* is not dataset=N"):
        parse_range_setting("droid=" + "4" * 400)  # (a raw OverflowError before)
