"""A Minari dataset through every stage from the command line: from a folder in
``MINARI_DATASETS_PATH`` layout and from the hub (the stand-in, laid out as Minari's remote
``farama-minari`` is), into a TED, the catalog and a LeRobot export that lerobot reads back."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from episode_warehouse import open_ted
from tests.helpers import dagster_home_of
from warehouse_cli.main import main
from warehouse_fixtures.minari_writer import MinariSpec, write_minari_dataset

pytestmark = pytest.mark.integration
PENDULUM = MinariSpec("fx/pendulum/expert-v0", env="Pendulum-v1", max_steps=12, episodes=3)


@pytest.fixture
def datasets(tmp_path):
    write_minari_dataset(PENDULUM, tmp_path / "minari")
    return tmp_path / "minari"


def test_a_state_only_dataset_from_a_folder_to_a_lerobot_export(warehouse_env, datasets,
                                                                  monkeypatch):  # fmt: skip
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    monkeypatch.setenv("MINARI_URL", str(datasets))
    assert main(["materialize", "minari", PENDULUM.dataset_id]) == 0
    td = open_ted("minari", PENDULUM.dataset_id, root=warehouse_env)
    assert len(td) == 3 * 12 and td["observation"].shape == (36, 3)
    raw = json.loads((warehouse_env / "raw" / "minari" / PENDULUM.dataset_id / "meta.json")
                     .read_text())  # fmt: skip
    assert raw["source_url"] == f"{datasets}/{PENDULUM.dataset_id}"

    export = warehouse_env / "lerobot" / "minari-fx-pendulum-expert-v0"
    ds = LeRobotDataset("local/minari-pendulum", root=export)
    assert ds.num_episodes == 3 and ds.num_frames == 36
    assert not any(f["dtype"] in ("image", "video") for f in ds.features.values())  # no camera
    frames = [ds[i] for i in range(ds.num_frames)]
    state = torch.stack([f["observation.state"] for f in frames])
    action = torch.stack([f["action"] for f in frames])
    assert torch.equal(state, td["observation"].float())
    assert torch.equal(action.reshape(td["action"].shape), td["action"].float())
    assert np.allclose(torch.stack([f["next.reward"] for f in frames]).view(-1),
                       td["next", "reward"].view(-1).float())  # fmt: skip


def test_a_dataset_from_the_hub_equals_its_folder_build(warehouse_env, hub, datasets, monkeypatch,
                                                         tmp_path):  # fmt: skip
    repo = "farama-minari/fx"  # Minari's remote: a repo per namespace, <env>/<name>-vN/ inside
    hub.store.create_repo(repo)
    sha = hub.store.commit_folder(repo, datasets / "fx")
    monkeypatch.delenv("MINARI_URL", raising=False)  # the default: hf://datasets/farama-minari
    assert main(["materialize", "minari", PENDULUM.dataset_id, "--through", "ted"]) == 0
    raw = json.loads((warehouse_env / "raw" / "minari" / PENDULUM.dataset_id / "meta.json")
                     .read_text())  # fmt: skip
    assert raw["revision"] == sha
    assert raw["source_url"] == f"hf://datasets/{repo}@{sha}/pendulum/expert-v0"
    from_hub = open_ted("minari", PENDULUM.dataset_id, root=warehouse_env)

    other = tmp_path / "from-folder"
    monkeypatch.setenv("MINARI_URL", str(datasets))
    with dagster_home_of(other):
        args = ["materialize", "minari", PENDULUM.dataset_id, "--root", str(other)]
        assert main([*args, "--through", "ted"]) == 0
    from_folder = open_ted("minari", PENDULUM.dataset_id, root=other)
    assert set(from_hub.keys(True, True)) == set(from_folder.keys(True, True))
    for key in from_hub.keys(True, True):
        assert torch.equal(from_hub.get(key), from_folder.get(key)), key


def test_a_dataset_from_a_bucket_and_the_sensors_listing(warehouse_env, datasets, gcs_endpoint,
                                                          monkeypatch):  # fmt: skip
    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.sources.minari.fingerprints import minari_fingerprints
    from warehouse_fixtures.gcs_emulator import upload_tree

    upload_tree(gcs_endpoint, "minari-fixtures", datasets, prefix="mirror")
    url = "gs://minari-fixtures/mirror"
    listed = minari_fingerprints(open_blob_store(url, endpoint=gcs_endpoint))
    assert list(listed) == [PENDULUM.dataset_id]  # what the sensor adds as a partition
    monkeypatch.setenv("MINARI_URL", url)
    assert main(["materialize", "minari", PENDULUM.dataset_id, "--through", "ted"]) == 0
    td = open_ted("minari", PENDULUM.dataset_id, root=warehouse_env)
    raw = json.loads((warehouse_env / "raw" / "minari" / PENDULUM.dataset_id / "meta.json")
                     .read_text())  # fmt: skip
    assert raw["source_url"] == f"{url}/{PENDULUM.dataset_id}"
    assert len(td) == 36 and set(raw["files"]) == {"data/main_data.hdf5", "data/metadata.json"}


def test_refusals_name_the_dataset_and_the_fix(warehouse_env, datasets, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_URL", str(datasets))
    assert main(["materialize", "minari", "fx/pendulum/none-v0"]) == 2
    err = capsys.readouterr().err
    assert "no Minari dataset there (no data/metadata.json)" in err and "MINARI_URL" in err
    assert main(["materialize", "minari", "../../etc-v0"]) == 2
    assert "not a Minari dataset id" in capsys.readouterr().err
    monkeypatch.setenv("MINARI_URL", "hf://datasets/farama-minari/D4RL")
    assert main(["materialize", "minari", PENDULUM.dataset_id]) == 2
    assert "a Minari remote on the hub is an organization" in capsys.readouterr().err
