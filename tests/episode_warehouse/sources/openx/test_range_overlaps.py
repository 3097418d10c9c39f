"""The parts of a dataset never overlap (fifth round, #57 item 1): a build of a range that
shares shards with a published one, or of the dataset whole beside its ranges, is refused before
it writes anything; ``warehouse drop`` removes a partition and its catalog rows as one change
(refused while a run holds it); ``warehouse recut`` cuts the dataset anew in one command. The
counts are compared with the episodes the fixture writer wrote."""

from __future__ import annotations

import shutil
import uuid

import pytest

from episode_warehouse import open_ted
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import PartitionConflictError
from episode_warehouse.paths import WarehouseLayout
from tests.helpers import build_openx_stages, dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.droid import write_droid
from warehouse_fixtures.environment import variable_set

# one worker runs the module: its module fixture is built once, not once a worker
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("range_overlaps")]


@pytest.fixture(scope="module")
def _built_ranges(tmp_path_factory):
    """DROID of 8 shards (3 episodes each) built as droid@00000-00003 and droid@00004-00007,
    once for the module (~8 s)."""
    tmp = tmp_path_factory.mktemp("ranges")
    _, by_shard = write_droid(tmp / "src", shards=8, per_shard=3)
    layout = WarehouseLayout.local(tmp / "wh")
    for key in ("droid@00000-00003", "droid@00004-00007"):
        build_openx_stages(layout, tmp / "src", key)
    return tmp, [len(e.record["steps"]) for shard in by_shard for e in shard]


@pytest.fixture
def two_ranges(_built_ranges, tmp_path):
    """A copy of the two built ranges and their source for one test to change."""
    built, lengths = _built_ranges
    for folder in ("src", "wh"):
        shutil.copytree(built / folder, tmp_path / folder, symlinks=True)
    return WarehouseLayout.local(tmp_path / "wh"), tmp_path / "src", lengths


def _counts(layout) -> tuple[int, int]:
    _, rows = run_query(
        layout.root, "SELECT count(*), sum(length) FROM episodes WHERE dataset = 'droid'"
    )
    return int(rows[0][0]), int(rows[0][1] or 0)


def test_an_overlapping_range_or_the_whole_dataset_is_refused_before_any_stage(two_ranges):
    layout, src, lengths = two_ranges
    assert _counts(layout) == (24, sum(lengths))
    for key, named in (
        ("droid@00004-00005", "droid@00004-00007"),
        ("droid@00002-00005", "droid@00000-00003, droid@00004-00007"),
        ("droid", "droid@00000-00003, droid@00004-00007"),
    ):
        with pytest.raises(PartitionConflictError, match=f"{named} hold") as caught:
            build_openx_stages(layout, src, key)
        assert "warehouse drop openx" in str(caught.value)
        assert "warehouse recut openx droid" in str(caught.value)
        assert not layout.raw_dir("openx", key).exists()  # nothing written
    assert _counts(layout) == (24, sum(lengths))


def test_a_whole_dataset_refuses_its_ranges(tmp_path):
    write_droid(tmp_path / "src", shards=2, per_shard=1)
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx_stages(layout, tmp_path / "src", "droid")
    with pytest.raises(PartitionConflictError, match="shards 1-1 of droid .* droid holds"):
        build_openx_stages(layout, tmp_path / "src", "droid@00001-00001")


def test_drop_removes_every_stage_and_the_catalog_rows(two_ranges, capsys):
    layout, src, lengths = two_ranges
    with dagster_home_of(layout.folder):
        assert main(["drop", "openx", "droid@00004-00007", "--root", str(layout.folder)]) == 0
    assert "4 artifact(s) removed" in capsys.readouterr().out  # catalog rows, TED, decoded, raw
    for stage in ("raw", "decoded", "ted"):
        assert not (layout.folder / stage / "openx" / "droid@00004-00007").exists()
    assert _counts(layout) == (12, sum(lengths[:12]))
    assert open_ted("openx", "droid", layout.folder).batch_size[0] == sum(lengths[:12])
    build_openx_stages(layout, src, "droid@00004-00005")  # what was in the way is gone
    assert _counts(layout) == (18, sum(lengths[:18]))


def test_drop_is_refused_while_a_run_holds_the_partition(two_ranges, capsys):
    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRun

    layout, _, lengths = two_ranges
    with dagster_home_of(layout.folder):
        from warehouse_cli.environment import cli_instance

        instance = cli_instance(str(layout.folder))
        run = DagsterRun(
            job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
            tags={"dagster/partition": "droid@00004-00007", "warehouse/source": "openx"},
        )  # fmt: skip
        instance.add_run(run)
        assert main(["drop", "openx", "droid@00004-00007", "--root", str(layout.folder)]) == 2
        assert f"droid@00004-00007 (run {run.run_id[:8]})" in capsys.readouterr().err
        assert _counts(layout) == (24, sum(lengths))  # nothing removed
        instance.report_run_failed(run)
        assert main(["drop", "openx", "droid@00004-00007", "--root", str(layout.folder)]) == 0


@pytest.mark.slow(reason="a recut through every stage: nine Dagster runs and three exports")
def test_recut_is_one_command(two_ranges, capsys):
    """Through every stage, the exports included: a range's export name was refused (the
    ``@``), after the old ranges had been dropped (#69 item 9)."""
    layout, src, lengths = two_ranges
    with dagster_home_of(layout.folder), variable_set("OPENX_URL", str(src)):
        code = main(["recut", "openx", "droid", "3", "--root", str(layout.folder)])
    assert code == 0, capsys.readouterr().err
    _, rows = run_query(layout.root, "SELECT DISTINCT partition FROM episodes ORDER BY 1")
    assert [r[0] for r in rows] == ["droid@00000-00002", "droid@00003-00005", "droid@00006-00007"]
    assert _counts(layout) == (24, sum(lengths))
    assert open_ted("openx", "droid", layout.folder).batch_size[0] == sum(lengths)
    exports = sorted(p.name for p in (layout.folder / "lerobot").iterdir()
                     if not p.name.startswith("."))  # (beside them: their lock files)  # fmt: skip
    assert exports == ["openx-droid.00000-00002", "openx-droid.00003-00005",
                       "openx-droid.00006-00007"]  # fmt: skip


def test_a_range_materializes_through_its_export(tmp_path, monkeypatch):
    """docs/droid.md's own command, every stage of the asset graph (#69 item 9): the export
    stopped at its name (the range's ``@``)."""
    import dagster as dg
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from warehouse_cli.runner import materialize_partition

    _, by_shard = write_droid(tmp_path / "src", shards=2, per_shard=1)
    root = tmp_path / "wh"
    monkeypatch.setenv("OPENX_URL", str(tmp_path / "src"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(root))
    with dg.instance_for_test() as instance:
        materialize_partition("openx", "droid@00000-00001", instance=instance)
    export = root / "lerobot" / "openx-droid.00000-00001"
    dataset = LeRobotDataset("local/droid", root=export)
    assert dataset.num_episodes == 2
    assert dataset.num_frames == sum(len(e.record["steps"]) for s in by_shard for e in s)


def test_ranges_of_two_dataset_versions_are_not_joined(tmp_path):
    """droid@00000-00001 read from version 1.0.1 and droid@00002-00003 from 1.0.2 (what a
    re-published dataset and a pinned OPENX_VERSIONS give): opening the dataset names both."""
    import json
    import shutil

    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage

    write_droid(tmp_path / "src", shards=4, per_shard=1)
    old = tmp_path / "src" / "droid" / "1.0.1"
    new = old.parent / "1.0.2"
    shutil.copytree(old, new)
    info = json.loads((new / "dataset_info.json").read_text())
    (new / "dataset_info.json").write_text(json.dumps({**info, "version": "1.0.2"}))
    layout = WarehouseLayout.local(tmp_path / "wh")
    for key, version in (("droid@00000-00001", "1.0.1"), ("droid@00002-00003", "1.0.2")):
        mirror_openx(str(tmp_path / "src"), key, layout.raw_dir("openx", key), root=layout.root,
                     code_version="t", versions={"droid": version})  # fmt: skip
        decode_openx(layout, key, code_version="t")
        build_ted_stage(layout, "openx", key, code_version="t")
    with pytest.raises(PartitionConflictError, match="dataset versions differ") as caught:
        open_ted("openx", "droid", layout.folder)
    message = str(caught.value)
    assert "droid@00000-00001 1.0.1" in message and "droid@00002-00003 1.0.2" in message
