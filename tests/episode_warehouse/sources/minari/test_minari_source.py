"""Minari datasets written by Minari's own ``DataCollector`` (every backend) into TEDs, compared
with what Minari itself reads back (``iterate_episodes``) and with TorchRL's
``MinariExperienceReplay`` on the same files (HDF5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted import open_ted
from tests.helpers import build_minari
from warehouse_fixtures.environment import variable_set
from warehouse_fixtures.minari_writer import (
    ARM_ID,
    COUNTDOWN_ID,
    MIXED_ID,
    MinariSpec,
    write_minari_dataset,
)

BACKENDS = ("hdf5", "arrow", "parquet")
SPECS = {
    **{f"cartpole-{b}": MinariSpec(f"fx/cartpole/{b}-v0", data_format=b, max_steps=30)
       for b in BACKENDS},
    **{f"arm-{b}": MinariSpec(f"fx/arm/{b}-v0", env=ARM_ID, data_format=b, max_steps=20)
       for b in BACKENDS},
    **{
        f"mixed-{b}": MinariSpec(f"fx/mixed/{b}-v0", env=MIXED_ID, data_format=b, max_steps=12)
        for b in BACKENDS
    },
    **{
        f"countdown-{b}": MinariSpec(f"fx/countdown/{b}-v0", env=COUNTDOWN_ID, data_format=b,
                                     max_steps=5)
        for b in BACKENDS
    },
    "pendulum": MinariSpec("fx/pendulum/random-v0", env="Pendulum-v1", max_steps=15, episodes=3),
    "arm-raw": MinariSpec("fx/arm/raw-v0", env=ARM_ID, max_steps=20, jpeg_encoding=False),
}  # fmt: skip


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every spec written by Minari, and built into one warehouse."""
    base = tmp_path_factory.mktemp("minari")
    datasets, root = base / "datasets", base / "warehouse"
    for spec in SPECS.values():
        build_minari(root, write_minari_dataset(spec, datasets), spec.dataset_id)
    return datasets, root


def _minari_episodes(datasets, dataset_id):
    import minari

    with variable_set("MINARI_DATASETS_PATH", str(datasets)):
        return list(minari.load_dataset(dataset_id).iterate_episodes())


def _leaves(value, path=()):
    """A Minari observation (a dict, a tuple, an array, a list of texts) as {TED key: value}."""
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in _leaves(sub, (*path, key)).items()}
    if isinstance(value, tuple):
        return {
            k: v for i, sub in enumerate(value) for k, v in _leaves(sub, (*path, str(i))).items()
        }
    if isinstance(value, list):  # a Text space: the TED holds indices into the record's texts
        return {("observation", *path): value}
    return {("observation", *path): np.asarray(value)}


def _as_ted(values: np.ndarray, image: bool) -> np.ndarray:
    """Minari's frames (N, H, W, C) as the TED holds them, channels first (other arrays as
    they are: a small uint8 grid is no image to Minari)."""
    return values.transpose(0, 3, 1, 2) if image else values


@pytest.mark.parametrize("name", list(SPECS))
def test_the_ted_is_what_minari_reads_back(written, name):
    datasets, root = written
    spec = SPECS[name]
    td = open_ted("minari", spec.dataset_id, root=root)
    record = json.loads((root / "ted" / "minari" / spec.dataset_id / "meta.json").read_text())
    texts, images = record.get("texts", {}), record.get("images", {})
    episodes = _minari_episodes(datasets, spec.dataset_id)
    start = 0
    assert int(td["episode"].max()) + 1 == len(episodes) == spec.episodes
    for number, episode in enumerate(episodes):
        n = len(episode.rewards)
        rows = td[start : start + n]
        for key, values in _leaves(episode.observations).items():
            if isinstance(values, list):
                table = texts["/".join(key)]
                assert [table[i] for i in rows.get(key).tolist()] == values[:-1]
                assert [table[i] for i in rows.get(("next", *key)).tolist()] == values[1:]
                continue
            # Minari's own rule (is_image_space) says which leaves are images
            image = values.ndim == 4 and min(values.shape[1:3]) >= 32 and values.dtype == np.uint8
            assert image == ("/".join(key) in images), key
            want = torch.from_numpy(_as_ted(values, image))
            assert torch.equal(rows.get(key), want[:-1]), (number, key)
            # the next observation is real on every step, the last one included: Minari's N+1th
            assert torch.equal(rows.get(("next", *key)), want[1:]), (number, key)
        action = torch.from_numpy(np.asarray(episode.actions))
        assert torch.equal(rows["action"], action.to(rows["action"].dtype)), number
        assert torch.equal(rows["next", "reward"].view(-1), torch.from_numpy(episode.rewards))
        assert rows["next", "reward"].dtype == torch.float64  # Minari's rewards, as recorded
        terminated = torch.from_numpy(np.asarray(episode.terminations, bool))
        truncated = torch.from_numpy(np.asarray(episode.truncations, bool))
        assert torch.equal(rows["next", "terminated"].view(-1), terminated)
        assert torch.equal(rows["next", "truncated"].view(-1), truncated)
        assert torch.equal(rows["next", "done"].view(-1), terminated | truncated)
        assert bool(rows["is_init"][0]) and not bool(rows["is_init"][1:].any())
        start += n
    assert start == len(td)


def test_infos_are_kept_with_their_final_row(written):
    datasets, root = written
    spec = SPECS["arm-hdf5"]
    td = open_ted("minari", spec.dataset_id, root=root)
    start = 0
    for episode in _minari_episodes(datasets, spec.dataset_id):
        n = len(episode.rewards)
        distance = torch.from_numpy(np.asarray(episode.infos["distance"]))
        assert torch.equal(td["info", "distance"][start : start + n], distance[:-1])
        assert torch.equal(td["next", "info", "distance"][start : start + n], distance[1:])
        start += n


@pytest.mark.integration  # TorchRL's replay buffer starts a process
@pytest.mark.parametrize("name", ["cartpole-hdf5", "pendulum", "arm-raw"])
def test_the_ted_equals_torchrl_minari_experience_replay(written, name, monkeypatch, tmp_path):
    """TorchRL's loader on the same HDF5 file. torchrl 0.14.1 fills its tensors, then keeps
    ``memmap_like`` of them, which has their shapes and none of their values (every key reads
    zeros); here the filled tensors are kept instead (``memmap``), so its layout is compared.
    It reads JPEG frames as bytes, so the image dataset is one written without JPEG."""
    from tensordict import TensorDict
    from torchrl.data.datasets.minari_data import MinariExperienceReplay

    datasets, root = written
    spec = SPECS[name]
    monkeypatch.setattr(
        TensorDict, "memmap_like", lambda self, prefix=None, **kw: self.memmap(prefix)
    )
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(datasets))
    theirs = MinariExperienceReplay(
        spec.dataset_id, batch_size=4, root=tmp_path, load_from_local_minari=True, download=True
    )[:]
    ours = open_ted("minari", spec.dataset_id, root=root)
    keys = [k for k in theirs.keys(True, True) if k not in ("done", "terminated", "truncated")]
    assert ("next", "observation") in keys or ("next", "observation", "camera") in keys
    for key in keys:
        want = theirs.get(key)
        if key[-1] == "camera" or key[-2:] == ("observation", "camera"):
            want = want.permute(0, 3, 1, 2)  # theirs channels last, the TED's channels first
        got = ours.get(key)
        assert torch.equal(got.to(want.dtype).reshape(want.shape), want), key


@pytest.mark.integration  # the SQL sandbox is a child process
def test_catalog_rows_carry_the_seed_and_the_datasets_provenance(written):
    from episode_warehouse.catalog.query import run_query

    datasets, root = written
    spec = SPECS["pendulum"]
    cols, rows = run_query(
        WarehouseLayout.local(root).root,
        "SELECT episode, length, return, terminated, truncated, episode_metadata FROM episodes "
        f"WHERE source = 'minari' AND partition = '{spec.dataset_id}' ORDER BY episode",
    )
    episodes = _minari_episodes(datasets, spec.dataset_id)
    assert [r[1] for r in rows] == [len(e.rewards) for e in episodes]
    assert np.allclose([r[2] for r in rows], [e.rewards.sum() for e in episodes])
    assert [r[4] for r in rows] == [True] * spec.episodes  # Pendulum never terminates
    meta = [json.loads(r[5]) for r in rows]
    assert [m["seed"] for m in meta] == [spec.seed * 1000 + e for e in range(spec.episodes)]
    assert {m["env_id"] for m in meta} == {"Pendulum-v1"}
    assert {m["algorithm_name"] for m in meta} == {"random"}
    assert {m["dataset_id"] for m in meta} == {spec.dataset_id}
    assert all(m["minari_version"] for m in meta)


@pytest.mark.integration  # the SQL sandbox is a child process
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_both_terminated_and_truncated_keeps_both_flags(written, backend):
    """#48: truncated was derived as ``not terminated``; gymnasium's TimeLimit sets both on a
    step that terminates at the limit, and Minari records both."""
    from episode_warehouse.catalog.query import run_query

    datasets, root = written
    spec = SPECS[f"countdown-{backend}"]
    episodes = _minari_episodes(datasets, spec.dataset_id)
    recorded = [(bool(e.terminations[-1]), bool(e.truncations[-1])) for e in episodes]
    assert recorded == [(True, False), (True, False), (True, True), (False, True)]
    td = open_ted("minari", spec.dataset_id, root=root)
    last = td["next", "done"].view(-1)
    flags = zip(td["next", "terminated"].view(-1)[last].tolist(),
                td["next", "truncated"].view(-1)[last].tolist(), strict=True)  # fmt: skip
    assert list(flags) == recorded
    _, rows = run_query(
        WarehouseLayout.local(root).root,
        "SELECT terminated, truncated FROM episodes "
        f"WHERE source = 'minari' AND partition = '{spec.dataset_id}' ORDER BY episode",
    )
    assert [tuple(r) for r in rows] == recorded


def test_only_the_images_minari_declares_are_cameras(written):
    """A small uint8 grid (MiniGrid's kind) is a state; the arm's 32x32 RGB frames a camera:
    the decoder declares which (Minari's is_image_space), the export and the viewer follow."""
    from episode_warehouse.export.features import features_for
    from episode_warehouse.ted.cameras import declared_images
    from episode_warehouse.ted.files import read_meta

    _, root = written
    for name, camera, state in (
        ("mixed-hdf5", None, "observation.4"),
        ("arm-arrow", "observation.images.camera", "observation.state"),
    ):
        spec = SPECS[name]
        folder = WarehouseLayout.local(root).ted_dir("minari", spec.dataset_id)
        declared = declared_images(read_meta(folder))
        td = open_ted("minari", spec.dataset_id, root=root)
        feats = features_for(td, False, images=declared)
        images = sorted(k for k, f in feats.items() if f["dtype"] == "image")
        assert images == ([camera] if camera else []), name
        assert feats[state]["dtype"] == "float32", name
    guessed = features_for(open_ted("minari", SPECS["mixed-hdf5"].dataset_id, root=root), False)
    assert "observation.images.4" in guessed  # by its shape alone, the grid passed for a camera
