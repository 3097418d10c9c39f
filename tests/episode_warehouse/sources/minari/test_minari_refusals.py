"""Bad Minari input, each refused by name before anything is published: spaces that disagree
with the data, ragged episodes, NaN where the space is bounded, ids that escape their folder,
HDF5 links and virtual datasets pointing outside the file. Every dataset starts as one Minari
wrote; one thing is then broken, as a damaged download or a hostile file would be."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

from episode_warehouse.errors import CorruptInputError, PartitionKeyError
from episode_warehouse.incremental import build_if_changed
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.minari.dataset_id import check_dataset_id
from episode_warehouse.sources.minari.decode import decode_minari
from warehouse_fixtures.minari_writer import ARM_ID, MinariSpec

CARTPOLE = MinariSpec("fx/cartpole/bad-v0", max_steps=12, episodes=3)
PENDULUM = MinariSpec("fx/pendulum/bad-v0", env="Pendulum-v1", max_steps=8, episodes=2)
ARM_ARROW = MinariSpec("fx/arm/bad-v0", env=ARM_ID, data_format="arrow", max_steps=8, episodes=2)


SPECS = (CARTPOLE, PENDULUM, ARM_ARROW)  # written once (conftest: originals, copy_of)


def _refused(dataset, tmp_path, match: str) -> None:
    """Decoding ``dataset`` is refused with ``match``, and no decoded folder is published."""
    layout = WarehouseLayout.local(tmp_path / "wh")
    target = layout.decoded_dir("minari", "fx/any/x-v0")
    with pytest.raises(CorruptInputError, match=match):
        build_if_changed(layout.root, target, {"t": 1}, lambda tmp: decode_minari(dataset, tmp))
    assert not (target / "meta.json").exists()


def test_a_space_that_disagrees_with_the_data(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    meta_path = dataset / "data" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    space = json.loads(meta["observation_space"])
    space.update(shape=[5], low=[-1.0] * 5, high=[1.0] * 5)
    meta["observation_space"] = json.dumps(space)
    meta_path.write_text(json.dumps(meta))
    _refused(dataset, tmp_path, r"observations has rows of shape \(4,\); the space declares \(5,\)")


def test_a_ragged_episode(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        obs = f["episode_1/observations"][()]
        del f["episode_1/observations"]
        f["episode_1/observations"] = obs[:-1]  # N observations for N actions
    _refused(dataset, tmp_path, r"episode 1: \d+ observations for \d+ steps .*ragged")


def test_a_termination_before_the_end(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        f["episode_0/terminations"][2] = True
    _refused(dataset, tmp_path, "terminations is set at step 2")


def test_nan_where_the_space_is_bounded(copy_of, tmp_path):
    dataset = copy_of(PENDULUM)  # actions in [-2, 2]
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        f["episode_1/actions"][3] = np.nan
    _refused(dataset, tmp_path, "episode 1: actions is NaN or infinite at step 3, where its space")


def test_a_discrete_value_outside_its_space(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)  # Discrete(2)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        f["episode_2/actions"][0] = 7
    _refused(dataset, tmp_path, r"actions is 7 at step 0, outside its space")


@pytest.mark.parametrize(
    "key", ["../escape/x-v0", "D4RL/../../etc/x-v0", "D4RL/door/human", "door-v2", "a//b-v0"]
)
def test_an_id_that_is_not_a_dataset_id(key):
    with pytest.raises(PartitionKeyError, match="namespace/env/name-vN"):
        check_dataset_id(key)


def test_an_external_link_is_not_followed(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    outside = tmp_path / "outside.hdf5"
    with h5py.File(outside, "w") as f:
        f["secret"] = np.arange(10)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        del f["episode_0/rewards"]
        f["episode_0/rewards"] = h5py.ExternalLink(str(outside), "/secret")
    _refused(dataset, tmp_path, "rewards is an external link")


@pytest.mark.parametrize("kind", ["external", "soft"])
def test_a_link_at_the_files_top_level_is_not_followed(copy_of, tmp_path, kind):
    """#48: an external link at /episode_1 pulled another file's episode into the TED and
    the catalog, a soft link there published a duplicate episode (exit 0 both)."""
    dataset = copy_of(CARTPOLE)
    outside = tmp_path / "outside.hdf5"
    with h5py.File(dataset / "data" / "main_data.hdf5", "r") as f, h5py.File(outside, "w") as o:
        f.copy("episode_2", o, name="episode_1")  # a well-formed episode, in another file
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        del f["episode_1"]
        f["episode_1"] = (h5py.ExternalLink(str(outside), "/episode_1") if kind == "external"
                          else h5py.SoftLink("/episode_0"))  # fmt: skip
    _refused(dataset, tmp_path, f"^.*/episode_1 is an? {kind} link")


def test_a_virtual_dataset_is_not_read(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    outside = tmp_path / "outside.hdf5"
    with h5py.File(outside, "w") as f:
        f["secret"] = np.ones(12)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        n = f["episode_0/rewards"].shape[0]
        layout = h5py.VirtualLayout(shape=(n,), dtype="f8")
        layout[:] = h5py.VirtualSource(str(outside), "secret", shape=(12,))[:n]
        del f["episode_0/rewards"]
        f.create_virtual_dataset("episode_0/rewards", layout)
    _refused(dataset, tmp_path, "rewards is a virtual dataset")


def test_an_arrow_episode_folder_missing(copy_of, tmp_path):
    dataset = copy_of(ARM_ARROW)
    shutil.rmtree(dataset / "data" / "1")
    _refused(dataset, tmp_path, "no folder for episode 1 of the metadata's 2")


def test_a_jpeg_frame_of_another_size(copy_of, tmp_path):
    import io

    import PIL.Image
    import pyarrow as pa

    dataset = copy_of(ARM_ARROW)
    part = next((dataset / "data" / "0").glob("*.arrow"))
    table = pa.ipc.open_file(pa.BufferReader(part.read_bytes())).read_all()
    obs = table.column("observations").combine_chunks()
    big = io.BytesIO()
    PIL.Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(big, format="JPEG")
    frames = obs.field("camera").to_pylist()
    frames[1] = big.getvalue()
    fields = {f.name: obs.field(f.name) for f in obs.type}
    fields["camera"] = pa.array(frames, pa.binary())
    new_obs = pa.StructArray.from_arrays(list(fields.values()), names=list(fields))
    table = table.set_column(table.column_names.index("observations"), "observations", new_obs)
    with pa.OSFile(str(part), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    _refused(dataset, tmp_path, r"frame 1 is not an image of the space's shape \(32, 32, 3\)")


def test_an_info_name_that_cannot_name_a_file(copy_of, tmp_path):
    """An info's name becomes a decoded file's name (``info/<name>.npy``): one safe segment or
    refused by the names guard, like every other name from outside."""
    dataset = copy_of(CARTPOLE)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        n = f["episode_0/rewards"].shape[0]
        for i in range(3):
            f.require_group(f"episode_{i}/infos")
        f["episode_0/infos/" + "x" * 300] = np.arange(n + 1, dtype=np.float64)
    _refused(dataset, tmp_path, "refused the info name")


def test_a_dict_key_that_cannot_name_a_file(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    meta_path = dataset / "data" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    box = json.loads(meta["observation_space"])
    meta["observation_space"] = json.dumps({"type": "Dict", "subspaces": {"a\nb": box}})
    meta_path.write_text(json.dumps(meta))
    _refused(dataset, tmp_path, "refused the Dict space key")
