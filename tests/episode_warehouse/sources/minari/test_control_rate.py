"""A fractional control rate (1/dt) is kept: the TED records it, the catalog shows it, and a
LeRobot export, whose fps is a whole number, is refused naming the rate instead of rounding it."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest

from episode_warehouse.errors import ExportError
from episode_warehouse.export.lerobot import ExportRequest, export_lerobot
from episode_warehouse.sources import registry
from episode_warehouse.ted.files import read_meta
from tests.helpers import build_minari
from warehouse_fixtures.minari_writer import MinariSpec, write_minari_dataset

SPEC = MinariSpec("fx/pendulum/rate-v0", env="Pendulum-v1", max_steps=6, episodes=2)


@pytest.mark.integration  # the export starts its PNG worker pool
def test_a_fractional_rate_is_kept_and_a_lerobot_export_refuses_it(tmp_path, monkeypatch):
    minari = registry.get("minari")
    # Adroit's dt is 0.04 s (25 Hz), a Kitchen's 0.08 s (12.5 Hz): a source may say 12.5
    monkeypatch.setitem(
        registry._SOURCES, "minari", dataclasses.replace(minari, fps=lambda p: 12.5)
    )
    root = tmp_path / "wh"
    build_minari(root, write_minari_dataset(SPEC, tmp_path / "minari"), SPEC.dataset_id)
    assert read_meta(root / "ted" / "minari" / SPEC.dataset_id).fps == 12.5
    rows = pq.read_table(next((root / "catalog" / "rows").rglob("partition.parquet"))).to_pylist()
    assert [r["fps"] for r in rows] == [12.5]
    request = ExportRequest("rate", str(root), [("minari", SPEC.dataset_id, 0, 0, 6)])
    with pytest.raises(ExportError, match=r"runs at 12.5 steps per second; a LeRobot"):
        export_lerobot(request, tmp_path / "export")
    assert not (tmp_path / "export" / "meta" / "info.json").exists()
