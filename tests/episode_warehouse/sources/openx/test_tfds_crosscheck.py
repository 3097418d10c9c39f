"""The RLDS reader against TensorFlow Datasets' own reader (scripts/tfds_crosscheck.py), where an
interpreter with tensorflow-datasets is named by EPISODE_WAREHOUSE_TFDS_PYTHON. TensorFlow is not
one of the project's dependencies, so this is skipped elsewhere, saying why; to run it:

    uv venv /tmp/tfenv && VIRTUAL_ENV=/tmp/tfenv uv pip install tensorflow-cpu tensorflow-datasets
    EPISODE_WAREHOUSE_TFDS_PYTHON=/tmp/tfenv/bin/python ./test -k tfds_crosscheck

With ``EPISODE_WAREHOUSE_OPENPI_SCRIPT`` naming ``examples/droid/compute_droid_nonidle_ranges.py``
of a checkout of Physical-Intelligence/openpi as well, openpi's own script runs on the DROID
fixture and its ranges are compared with the catalog's (tqdm in that environment too).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.rlds_robot import write_robot_dataset

pytestmark = pytest.mark.integration
SCRIPT = Path(__file__).parents[4] / "scripts" / "tfds_crosscheck.py"
TFDS_PYTHON = os.environ.get("EPISODE_WAREHOUSE_TFDS_PYTHON", "")
OPENPI_SCRIPT = os.environ.get("EPISODE_WAREHOUSE_OPENPI_SCRIPT", "")


@pytest.fixture
def tfds_python() -> str:
    if not TFDS_PYTHON:
        pytest.skip("EPISODE_WAREHOUSE_TFDS_PYTHON names no interpreter with tensorflow-datasets")
    return TFDS_PYTHON


def _crosscheck(tfds_python: str, folder: Path, tmp_path: Path) -> str:
    dump = tmp_path / f"{folder.parent.name}.npz"
    subprocess.run(
        [tfds_python, str(SCRIPT), "dump", str(folder), str(dump)],
        check=True,
        capture_output=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "compare", str(folder), str(dump)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DIFFERENT" not in done.stdout
    return done.stdout


def test_every_leaf_kind_equals_tfds(tfds_python, tmp_path):
    folder, _ = write_robot_dataset(tmp_path / "src")
    out = _crosscheck(tfds_python, folder, tmp_path)
    assert "observation/depth: equal" in out and "counters/u64: equal" in out


def test_droid_fixture_equals_tfds(tfds_python, tmp_path):
    """The DROID fixture (three JPEG cameras, action_dict, episode metadata) as TFDS reads it."""
    from warehouse_fixtures.droid import write_droid

    folder, _ = write_droid(tmp_path / "src", shards=2, per_shard=1)
    out = _crosscheck(tfds_python, folder, tmp_path)
    assert "observation/wrist_image_left: equal" in out
    assert "action_dict/joint_velocity: equal" in out


def test_real_samples_equal_tfds(tfds_python, shared_samples, tmp_path):
    from tests.episode_warehouse.sources.openx.test_rlds_samples import MT_OPT_RLDS

    _crosscheck(tfds_python, shared_samples / "rlds" / "bridge" / "1.0.0", tmp_path)
    folder = tmp_path / "src" / "mt_opt_rlds" / "1.0.0"
    folder.mkdir(parents=True)
    shard = "mt_opt_rlds-train.tfrecord-00000-of-00001"
    shutil.copyfile(shared_samples / "rlds/mt_opt_rlds/1.0.0" / shard, folder / shard)
    (folder / "features.json").write_text(json.dumps(MT_OPT_RLDS))
    split = {"name": "train", "shardLengths": ["2"], "filepathTemplate": w.TEMPLATE}
    info = {"name": "mt_opt_rlds", "version": "1.0.0", "fileFormat": "tfrecord", "splits": [split]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    out = _crosscheck(tfds_python, folder, tmp_path)
    assert "observation/image: equal to the accurate IDCT" in out


def test_idle_ranges_equal_openpis_own_script(tfds_python, tmp_path):
    """openpi's compute_droid_nonidle_ranges.py itself (EPISODE_WAREHOUSE_OPENPI_SCRIPT: its path
    in a checkout of Physical-Intelligence/openpi), run by scripts/openpi_ranges.py on the DROID
    fixture, against the catalog's nonidle_ranges, episode by episode."""
    if not OPENPI_SCRIPT:
        pytest.skip("EPISODE_WAREHOUSE_OPENPI_SCRIPT names no copy of openpi's script")
    from episode_warehouse.catalog import run_query
    from episode_warehouse.paths import WarehouseLayout
    from tests.helpers import build_openx_stages
    from warehouse_fixtures.droid import write_droid

    folder, _ = write_droid(tmp_path / "src", shards=5, per_shard=2)
    out = tmp_path / "openpi.json"
    subprocess.run(
        [tfds_python, str(SCRIPT.parent / "openpi_ranges.py"), OPENPI_SCRIPT, str(folder),
         str(out)],
        check=True, capture_output=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )  # fmt: skip
    openpi = json.loads(out.read_text())
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx_stages(layout, tmp_path / "src", "droid")
    _, rows = run_query(
        layout.root,
        "SELECT concat(episode_metadata->>'$.\"episode_metadata/recording_folderpath\"', '--', "
        "episode_metadata->>'$.\"episode_metadata/file_path\"'), nonidle_ranges FROM episodes",
    )
    ours = {key: [list(r) for r in ranges] for key, ranges in rows}
    assert len(ours) == 10
    assert ours == openpi
