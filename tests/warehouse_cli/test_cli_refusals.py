"""Source rows that cannot mean what the format says, refused at the command line: exit 2, one
line naming the file and the fix, and nothing of the partition published past its raw copy."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from episode_warehouse.paths import WarehouseLayout
from tests.episode_warehouse.sources.atari.test_rlu import LENGTHS, SEMANTIC_REFUSALS
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures import rlu_writer as w
from warehouse_fixtures.demo import rlu_episodes
from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset


def _published(root) -> list[str]:
    layout = WarehouseLayout.local(root)
    return sorted(
        str(p.relative_to(root))
        for stage in ("decoded", "ted", "catalog/rows", "lerobot")
        for p in (layout.folder / stage).rglob("meta.json")
    )


def _refused(capsys, root, argv, match):
    capsys.readouterr()
    with dagster_home_of(root):
        rc = main([*argv, "--root", str(root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert re.search(match, err[0]), err[0]
    assert "Fix:" in err[0]
    assert _published(root) == []  # no decoded, TED, catalog rows or export
    return err[0]


# Each refusal's message is test_rlu's (the reader's); here, the command line's one line and
# exit code, the same for every case: a step-level and an episode-level refusal in the default
# tier, the other five in the slow one (~1.8 s each: a materialization apiece).
_CLI_CASES = [
    pytest.param(change, message, id=change.__name__,
                 marks=[] if k in (0, len(SEMANTIC_REFUSALS) - 1) else [pytest.mark.slow(
                     reason="the same command-line refusal as the first and the last case; "
                     "its message is tested by test_rlu")])
    for k, (change, message) in enumerate(SEMANTIC_REFUSALS)
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), _CLI_CASES)
def test_rl_unplugged_refusals(warehouse_env, capsys, monkeypatch, tmp_path, change, message):
    files = rlu_episodes(LENGTHS, seed=7)
    src = tmp_path / "src"
    records = [[w.encode_episode(e) for e in f] for f in files]
    records[1][1] = w.encode_episode(change(files[1][1]))
    for index, recs in enumerate(records):
        w.write_file(src / "Pong" / w.file_name(3, index, len(records)), recs)
    monkeypatch.setenv("ATARI_REPLAY_URL", str(src))
    line = _refused(capsys, tmp_path / "wh", ["materialize", "atari", "Pong/3"], message)
    assert "run_3-00001-of-00003 record at byte" in line


def test_lerobot_refusals(warehouse_env, capsys, monkeypatch, tmp_path):
    spec = LeRobotSpec(repo_id="lab/bad", data_files_size_in_mb=100)
    good = write_lerobot_dataset(spec, tmp_path / "good")

    def info(change):
        def edit(folder):
            path = folder / "meta" / "info.json"
            path.write_text(json.dumps(change(json.loads(path.read_text()))))

        return edit

    def column(name, change):
        def edit(folder):
            victim = next((folder / "data").rglob("*.parquet"))
            table = pq.read_table(victim)
            values = change(table)
            i = table.schema.get_field_index(name)
            pq.write_table(table.set_column(i, pa.field(name, values.type), values), victim)

        return edit

    def nan_action(table):
        values = np.stack(table.column("action").to_numpy(zero_copy_only=False)).copy()
        values[4, 0] = np.inf
        return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), 2)

    def far_task(table):
        tasks = table.column("task_index").to_numpy().copy()
        tasks[1] = -1
        return pa.array(tasks)

    def uint8_state(meta):
        meta["features"]["observation.state"]["dtype"] = "uint8"
        return meta

    cases = [
        (info(lambda m: {**m, "fps": 12.5}), r"fps is 12.5, not a positive whole number"),
        (info(uint8_state), r"observation.state holds float32 values that info.json's dtype"),
        (column("action", nan_action), r"action is inf at frame 4"),
        (column("task_index", far_task), r"frame 1 has task_index -1, but meta/tasks.parquet"),
    ]
    for i, (edit, message) in enumerate(cases):
        src = tmp_path / f"src{i}"
        shutil.copytree(good, src / spec.repo_id)
        edit(src / spec.repo_id)
        monkeypatch.setenv("LEROBOT_URL", str(src))
        err = _refused(
            capsys, tmp_path / f"wh{i}", ["materialize", "lerobot", spec.repo_id], message
        )
        # the source's file is named first, the warehouse's copy after it (#43)
        assert f"]: {src / spec.repo_id}/" in err and "(the warehouse's copy: " in err, err
