"""The loaders' one batch read (every key gathered, every frame decoded straight into the batch:
what ``ted_collate`` and ``__getitems__`` do by default) equals the same slices read one by one
and stacked (``SliceRef.read``, the TED's stand-ins), on every kind of TED: Atari (zstd
frames, terminations), Minari written by Minari (a JPEG camera and final observations, with
part-episode selections), the real mt_opt RLDS sample's JPEGs, in the main process and in
DataLoader workers (the shared-memory slot)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from torch.utils.data import DataLoader

from episode_warehouse.loading import EpisodeSliceDataset, EpisodeStream, Selection, ted_collate
from episode_warehouse.loading.batch_read import SliceRef
from episode_warehouse.paths import WarehouseLayout
from tests.episode_warehouse.sources.openx.test_rlds_samples import mt_opt  # noqa: F401
from tests.helpers import build_minari, build_openx_stages
from warehouse_fixtures.minari_writer import ARM_ID, MinariSpec, write_minari_dataset

SLICE, BATCH = 4, 6


def _rows(root, source: str, partition: str, part: bool = False) -> list[tuple]:
    ted = WarehouseLayout.local(root).ted_dir(source, partition)
    table = pq.read_table(ted / "episodes.parquet").to_pylist()
    if part:  # parts of episodes: the last step's next observation is a real next step
        return [(source, partition, e["episode"], e["start"] + 2, e["length"] - 5)
                for e in table if e["length"] >= 2 + 5 + SLICE]  # fmt: skip
    return [(source, partition, e["episode"], e["start"], e["length"]) for e in table]


def _batches(selection: Selection, workers: int = 0) -> list:
    """The stream's batches as a trainer gets them (no option: the default)."""
    stream = EpisodeStream(selection, SLICE, drop_last=True, seed=3)
    loader = DataLoader(stream, batch_size=BATCH, num_workers=workers, collate_fn=ted_collate,
                        drop_last=True)  # fmt: skip
    return [batch.clone() for batch in loader]


def _one_by_one(selection: Selection) -> list:
    """The same slices, each read alone (the TED's stand-ins) and stacked."""
    refs = list(EpisodeStream(selection, SLICE, drop_last=True, seed=3))
    assert all(isinstance(r, SliceRef) and r.data is None for r in refs)  # nothing read yet
    whole = len(refs) // BATCH * BATCH
    return [torch.stack([r.read() for r in refs[i : i + BATCH]]).contiguous()
            for i in range(0, whole, BATCH)]  # fmt: skip


def _same(got: list, want: list) -> None:
    assert len(got) == len(want) > 0
    for n, (a, b) in enumerate(zip(got, want, strict=True)):
        keys = sorted(b.keys(True, True), key=str)
        assert sorted(a.keys(True, True), key=str) == keys, n
        for key in keys:
            x, y = a.get(key), b.get(key)
            assert (x.shape, x.dtype) == (y.shape, y.dtype), (n, key)
            assert torch.equal(x, y), (n, key)


def _frames_keys(batch) -> list:
    return [k for k in batch.keys(True, True) if batch.get(k).ndim == 5]


@pytest.fixture(scope="module")
def minari_root(tmp_path_factory):
    base = tmp_path_factory.mktemp("batch-read")
    spec = MinariSpec("fx/arm/batch-v0", env=ARM_ID, max_steps=20, episodes=4)
    build_minari(base / "wh", write_minari_dataset(spec, base / "datasets"), spec.dataset_id)
    return base / "wh", spec.dataset_id


def test_atari_batches_equal_the_slices_stacked(warehouse_root):
    selection = Selection.from_rows(_rows(warehouse_root, "atari", "Pong/1"), warehouse_root)
    batched, items = _batches(selection), _one_by_one(selection)
    _same(batched, items)
    assert any(bool(b["next", "done"].any()) for b in items)  # episode ends were met


@pytest.mark.parametrize("part", [False, True])
def test_minari_camera_and_final_observations(minari_root, part):
    root, dataset_id = minari_root
    selection = Selection.from_rows(_rows(root, "minari", dataset_id, part), root)
    batched = _batches(selection)
    _same(batched, _one_by_one(selection))
    assert _frames_keys(batched[0])  # a camera was decoded
    if part:  # no step of a part-episode slice reads zeros or a final observation by mistake
        assert not any(bool(b["next", "done"].any()) for b in batched)


def test_real_jpegs_decode_into_the_batch_as_their_decoder_gives_them(
    mt_opt,  # noqa: F811
    tmp_path,
):
    src, _ = mt_opt
    root = tmp_path / "wh"
    build_openx_stages(WarehouseLayout.local(root), src, "mt_opt_rlds")
    selection = Selection.from_rows(_rows(root, "openx", "mt_opt_rlds"), root)
    batched = _batches(selection)
    _same(batched, _one_by_one(selection))
    camera = next(k for k in _frames_keys(batched[0]) if k[0] != "next")
    c, h, w = batched[0].get(camera).shape[-3:]
    assert batched[0].get(camera).stride()[-3:] == (1, w * c, c)  # pixels as decoded: HWC
    refs = list(EpisodeStream(selection, SLICE, drop_last=True))[:BATCH]
    batch = ted_collate(refs)  # ("next", camera): the camera's rows shifted by one, no copy
    assert batch.get(("next", *camera)).data_ptr() == batch.get(camera).data_ptr() + c * h * w


def test_the_map_style_dataset_reads_its_batches_the_same_way(warehouse_root):
    selection = Selection.from_rows(_rows(warehouse_root, "atari", "Pong/2"), warehouse_root)
    ds = EpisodeSliceDataset(selection, SLICE)
    picks = [[0, 5, 3], [len(ds) - 1, 1, 2]]
    _same([ted_collate(ds.__getitems__(p)) for p in picks],
          [torch.stack([ds[k] for k in p]).contiguous() for p in picks])  # fmt: skip
    loader = DataLoader(ds, batch_size=3, sampler=picks[0], collate_fn=ted_collate)
    _same(list(loader), [torch.stack([ds[k] for k in picks[0]]).contiguous()])


@pytest.mark.integration  # DataLoader workers
def test_worker_batches_come_through_the_slot_equal(minari_root):
    root, dataset_id = minari_root
    selection = Selection.from_rows(_rows(root, "minari", dataset_id), root)
    want = _one_by_one(selection)
    stream = EpisodeStream(selection, SLICE, drop_last=True, seed=3)
    loader = DataLoader(stream, batch_size=BATCH, num_workers=2, collate_fn=ted_collate,
                        drop_last=True, persistent_workers=True)  # fmt: skip
    got = list(loader)

    # two workers deal the episodes between them: compare slice by slice, keyed by origin
    def by_origin(batches):
        return {(int(b["selection_index"][i, 0]), int(b["step"][i, 0])): b[i]
                for b in batches for i in range(b.batch_size[0])}  # fmt: skip

    mine, theirs = by_origin(got), by_origin(want)
    assert mine and mine.keys() <= theirs.keys()  # (each worker drops its own last batch)
    _same([mine[k] for k in sorted(mine)], [theirs[k] for k in sorted(mine)])
    assert np.prod(got[0].batch_size) == BATCH * SLICE


@pytest.mark.integration  # DataLoader workers
def test_step_windows_from_workers_equal_the_main_process(minari_root):
    """StepWindowDataset's batches written into a worker's slot (frames decoded into it) equal
    the same indices gathered in the main process."""
    from episode_warehouse.loading import StepWindowDataset, no_collate

    root, dataset_id = minari_root
    selection = Selection.from_rows(_rows(root, "minari", dataset_id), root)
    probe = EpisodeStream(selection, SLICE)
    td = probe.cache.get("minari", dataset_id)
    from episode_warehouse.frames.tensor import FrameTensor

    camera = next(k for k in td.keys(True, True) if isinstance(td.get(k), FrameTensor))
    deltas = {camera: [-1, 0, 2], ("next", *camera): [0], "action": [0, 1]}
    windows = StepWindowDataset(selection, deltas)
    loader = DataLoader(windows, batch_size=5, num_workers=2, collate_fn=no_collate)
    got = [batch.clone() for batch in loader]
    want = [windows.__getitems__(list(range(k, min(k + 5, len(windows)))))
            for k in range(0, len(windows), 5)]  # fmt: skip
    assert len(got) == len(want) > 1
    for a, b in zip(got, want, strict=True):
        for key in b.keys(True, True):
            assert torch.equal(a.get(key), b.get(key)), key
    assert ted_collate(want[0]) is want[0]  # a batch the dataset made passes through
    # an empty batch in a worker is an empty batch, as in the main process (it raised there)
    empty = DataLoader(windows, batch_sampler=[[], [0, 1]], num_workers=1, collate_fn=no_collate)
    sizes = [batch.batch_size[0] for batch in empty]
    assert sizes == [0, 2]


@pytest.fixture(scope="module")
def two_minari_root(tmp_path_factory):
    """Two Minari datasets of the same arm (same leaves) in one warehouse."""
    base = tmp_path_factory.mktemp("batch-read-two")
    ids = []
    for name in ("fx/arm/first-v0", "fx/arm/second-v0"):
        spec = MinariSpec(name, env=ARM_ID, max_steps=12, episodes=3)
        build_minari(base / "wh", write_minari_dataset(spec, base / "datasets"), spec.dataset_id)
        ids.append(spec.dataset_id)
    return base / "wh", ids


@pytest.mark.integration  # DataLoader workers
def test_shuffled_windows_over_two_partitions_are_written_into_the_slot(two_minari_root):
    """A shuffled batch spans partitions: each partition's items are decoded into their places
    in the worker's slot (issue #58: such batches went through the item path), equal to the
    same indices gathered partition by partition in the main process."""
    from episode_warehouse.frames.tensor import FrameTensor
    from episode_warehouse.loading import StepWindowDataset, no_collate

    root, ids = two_minari_root
    rows = [r for dataset_id in ids for r in _rows(root, "minari", dataset_id)]
    selection = Selection.from_rows(rows, root)
    td = EpisodeStream(selection, SLICE).cache.get("minari", ids[0])
    camera = next(k for k in td.keys(True, True) if isinstance(td.get(k), FrameTensor))
    windows = StepWindowDataset(selection, {camera: [-1, 0, 2], "action": [0, 1]})
    order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(0)).tolist()
    batches = [order[k : k + 7] for k in range(0, len(order), 7)]
    loader = DataLoader(windows, batch_sampler=batches, num_workers=2, collate_fn=no_collate)
    got, in_slot = [], []
    for batch in loader:  # a slot batch's leaves are views of one shared memory
        storage = batch.get(camera).untyped_storage().data_ptr()
        in_slot.append(storage == batch.get("action").untyped_storage().data_ptr())
        got.append(batch.clone())
    assert all(in_slot)
    spanning = 0
    for batch, indices in zip(got, batches, strict=True):
        want = windows.__getitems__(indices)
        spanning += len(set(np.asarray(selection.partition)[want["selection_index"]])) > 1
        assert sorted(batch.keys(True, True), key=str) == sorted(want.keys(True, True), key=str)
        for key in want.keys(True, True):
            assert torch.equal(batch.get(key), want.get(key)), key
    assert spanning > len(batches) // 2  # most batches mix the two datasets
