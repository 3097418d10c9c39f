"""Build partitions with the domain functions only (no Dagster), for domain-level tests."""

from pathlib import Path

import numpy as np

from episode_warehouse.incremental import build_if_changed
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.decode import decode_run
from episode_warehouse.sources.openx.decode import decode_shards
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run
from warehouse_fixtures.environment import variable_set
from warehouse_fixtures.lerobot_writer import LeRobotSpec
from warehouse_fixtures.openx_writer import DatasetSpec, write_dataset

SHARED_SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "samples"
# the AV1 dataset the session fixture ``lerobot_video`` writes once (SVT-AV1 encodes frames of
# 64 pixels wide and up)
VIDEO_SPEC = LeRobotSpec(repo_id="owner/clips", video=True, frames="scene", lengths=(16, 14, 13),
                         cameras={"top": (48, 64), "wrist": (64, 64)})  # fmt: skip


def _layout(root) -> WarehouseLayout:
    """``root``: a layout (a bucket root's), or a local root's folder."""
    return root if isinstance(root, WarehouseLayout) else WarehouseLayout.local(root)


def _publish(root, source, key, decode, seed):
    layout = _layout(root)
    build_if_changed(layout.root, layout.decoded_dir(source, key), {"test": seed}, decode)
    build_ted_stage(layout, source, key, code_version="t")
    publish_catalog_rows(layout, source, key, code_version="t", run_id="r")


def build_atari(root, key, seed, capacity=400, episodes=25, lengths=(30, 160)):
    rng = np.random.default_rng(seed)
    raw = _layout(root).folder / "raw-src" / key
    write_run(
        raw,
        [play_episode(rng, int(n)) for n in rng.integers(*lengths, episodes)],
        capacity,
        final_log=False,
        compresslevel=1,
    )
    n = len(list(raw.glob("add_count_ckpt.*.gz")))
    _publish(
        root,
        "atari",
        key,
        lambda dec: decode_run(raw, list(range(n)), dec, workers=1, lineage=_LINEAGE),
        seed,
    )


def build_openx(root, spec: DatasetSpec, shards, seed=0):
    mirror = _layout(root).folder / "openx-src"
    episodes = write_dataset(mirror, spec, shards, seed=seed)
    _publish(
        root,
        "openx",
        spec.name,
        lambda dec: decode_shards(
            list_shards(str(mirror), spec.name).shards, dec, lineage=_LINEAGE
        ),
        seed,
    )
    return episodes


def build_lerobot(root, spec, source: Path | None = None):
    """A LeRobot dataset written with lerobot (``LeRobotDataset.create``) and published as the
    partition ``spec.repo_id`` of ``root``, through the decoded, TED and catalog stages;
    ``source``: the dataset's folder where it was written already (``lerobot_video``)."""
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from warehouse_fixtures.lerobot_writer import write_lerobot_dataset

    folder = source or write_lerobot_dataset(spec, _layout(root).folder / "lerobot-src")
    _publish(
        root,
        "lerobot",
        spec.repo_id,
        lambda dec: decode_lerobot(open_lerobot_folder(folder), dec, lineage=_LINEAGE),
        0,
    )


def build_minari(root, dataset: Path, dataset_id: str, seed=0):
    """A Minari dataset folder (written by Minari: ``warehouse_fixtures.minari_writer``)
    published as the partition ``dataset_id`` of ``root``, through decoded, TED and catalog."""
    from episode_warehouse.sources.minari.decode import decode_minari

    _publish(
        root, "minari", dataset_id, lambda dec: decode_minari(dataset, dec, lineage=_LINEAGE), seed
    )


_LINEAGE = {"source_url": "test", "source_version": "test"}


def build_oxe_standardized(root, name: str, lengths, overrides=None):
    """An OXE dataset written from its real features.json (``shared/samples/oxe_features``)
    and published as the partition ``name`` through raw, decoded, TED, catalog rows and the
    standardized stage."""
    from warehouse_fixtures.oxe_from_features import write_from_features

    layout = _layout(root)
    features = next((SHARED_SAMPLES / "oxe_features" / name).rglob("features.json"))
    src = layout.folder / "oxe-src"
    write_from_features(src, name, features, list(lengths), overrides=overrides)
    build_openx_stages(layout, src, name, standardized=True)


def build_openx_stages(root, src, key: str, *, standardized: bool = False):
    """The OpenX partition ``key`` (a dataset, or a shard range of one) of the folder ``src``
    through raw, decoded, TED and catalog rows (and the standardized stage); the Built of the
    raw, decoded and TED stages."""
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout = _layout(root)
    raw = mirror_openx(str(src), key, layout.raw_dir("openx", key), root=layout.root,
                       code_version="t")  # fmt: skip
    decoded = decode_openx(layout, key, code_version="t")
    ted = build_ted_stage(layout, "openx", key, code_version="t")
    publish_catalog_rows(layout, "openx", key, code_version="t", run_id="r")
    if standardized:
        build_standardized_stage(layout, "openx", key, code_version="t")
    return raw, decoded, ted


def dagster_home_of(root):
    """``DAGSTER_HOME`` set to an instance of ``root``'s own (beside it) for the CLI calls inside:
    the CLI keeps one Dagster instance per warehouse root and refuses to mix them."""
    return variable_set("DAGSTER_HOME", str(Path(root).parent / f".dagster_home-{Path(root).name}"))


def td_leaves(td) -> dict:
    """Every leaf of a TensorDict by key, strings (non-tensor entries) included, as plain
    values: tensors as their numpy arrays, string stacks as lists."""
    from tensordict import is_non_tensor

    from episode_warehouse.batches.slots import non_tensor_keys

    out = {}
    for key in td.keys(True, True):
        out[key if isinstance(key, tuple) else (key,)] = td.get(key).numpy()
    for key in non_tensor_keys(td):
        value = td.get(key)
        out[key] = value.tolist() if is_non_tensor(value) else value
    return out


def assert_same_batches(got: list, want: list) -> None:
    """Two lists of batches hold the same keys and values, strings included, in order."""
    import numpy as np

    assert len(got) == len(want), (len(got), len(want))
    for n, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = td_leaves(a), td_leaves(b)
        assert set(a) == set(b), (n, sorted(set(a) ^ set(b)))
        for key, value in b.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(a[key], value, err_msg=f"batch {n} {key}")
            else:
                assert a[key] == value, (n, key)
