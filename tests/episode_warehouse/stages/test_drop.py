"""``warehouse drop`` is a writer (#69 item 5): a catalog stage still computing when the drop
runs publishes nothing after it (before, it published, and the catalog counted episodes whose
TED was gone); the debris of a drop killed midway is swept by the next; the partition's LeRobot
export goes with it, as the command's help says (it stayed)."""

from __future__ import annotations

import threading

import pytest

from episode_warehouse.catalog import CatalogStore, run_query
from episode_warehouse.catalog import rows as catalog_rows_module
from episode_warehouse.errors import ConcurrentWriteError
from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.export.request import partition_export_name
from episode_warehouse.loading import select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.stages import publish_catalog_rows
from episode_warehouse.stages.partitions import drop_partition
from tests.helpers import build_openx, dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # worker pools, the catalog's sandboxed queries

SPEC = DatasetSpec("cmu_stretch", cameras=("image",), image_size=16)  # a known control rate


def test_a_catalog_stage_computing_under_a_drop_publishes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "wh"
    layout = WarehouseLayout.local(root)
    build_openx(root, SPEC, [[5, 6]])
    computing, dropped = threading.Event(), threading.Event()
    real = catalog_rows_module.catalog_rows

    def slow(*args, **kwargs):  # the stage has read the TED; the drop runs now
        out = real(*args, **kwargs)
        computing.set()
        dropped.wait(60)
        return out

    monkeypatch.setattr(catalog_rows_module, "catalog_rows", slow)
    failures: list[BaseException] = []

    def stage():
        try:
            publish_catalog_rows(layout, "openx", SPEC.name, code_version="new", run_id="r2")
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failures.append(exc)

    thread = threading.Thread(target=stage)
    thread.start()
    assert computing.wait(60)
    removed = drop_partition(layout.root, "openx", SPEC.name)
    assert "ted/openx/cmu_stretch" in removed
    dropped.set()
    thread.join(60)
    assert len(failures) == 1 and isinstance(failures[0], ConcurrentWriteError)
    assert "was dropped while this was built" in str(failures[0])
    assert CatalogStore(layout.root).published() == []  # no rows of a TED that is gone


def test_a_killed_drop_is_swept_and_the_export_goes_with_the_partition(tmp_path, capsys):
    root = tmp_path / "wh"
    layout = WarehouseLayout.local(root)
    build_openx(root, SPEC, [[5, 6]])
    sel = select_episodes("SELECT source, partition, episode, start, length FROM episodes",
                          root=root)  # fmt: skip
    name = partition_export_name("openx", SPEC.name)
    export_lerobot(ExportRequest(name, str(root), [tuple(r) for r in sel.rows()]),
                   layout.lerobot_dir(name), root=layout.root)  # fmt: skip
    assert (layout.lerobot_dir(name) / "meta" / "info.json").is_file()
    ted = layout.ted_dir("openx", SPEC.name)
    killed = ted.with_name(f".staging-{ted.name}-killeddrop")
    ted.rename(killed)  # a drop killed between its rename and its delete
    with dagster_home_of(root):
        assert main(["drop", "openx", SPEC.name, "--root", str(root)]) == 0
    assert not killed.exists()  # swept
    assert not layout.lerobot_dir(name).exists()
    assert not any(p.name.startswith(".staging-") for p in root.rglob("*"))
    _, rows = run_query(layout.root, "SELECT count(*) FROM episodes")
    assert rows == [(0,)]
