"""VLADataset over a two-robot mixture: every batch passes TorchRL's validate_vla_tensordict;
items hold the standardized values, normalized per dataset with its own statistics as Octo's
formula defines; sampling follows the balanced weights; workers, ranks and resume deliver each
item once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from episode_warehouse.errors import ConfigError
from episode_warehouse.loading import no_collate, ted_collate
from episode_warehouse.standardized import (
    VLADataset,
    dataset_statistics,
    mixture_weights,
    open_standardized,
)
from episode_warehouse.standardized.vla import VLARef
from tests.episode_warehouse.standardized.conftest import G
from tests.helpers import assert_same_batches

MIX = [("fractal20220817_data", 1.0), ("taco_play", 1.0)]
SIZES = {"primary": (32, 32), "wrist": (16, 16)}


@pytest.fixture
def root(oxe):
    oxe("fractal20220817_data", [5, 4], G)
    layout, _ = oxe("taco_play", [6, 6, 3])
    return layout.folder


def _expected(root, name, row, window, chunk):
    """The item at ``row`` from open_standardized and the statistics (Octo's formulas)."""
    td = open_standardized("openx", name, root=root)
    stats = dataset_statistics("openx", name, root=root)
    starts = td["is_init"].nonzero().squeeze(-1).numpy()
    ends = td["next", "done"].squeeze(-1).nonzero().squeeze(-1).numpy()
    start = starts[starts <= row].max()
    end = ends[ends >= row].min()
    history = np.maximum(np.arange(row - window + 1, row + 1), start)
    future = np.minimum(history[:, None] + np.arange(chunk), end)
    a = td["action"].numpy()
    mean, std = np.float32(stats["action"]["mean"]), np.float32(stats["action"]["std"])
    mask = np.array(stats["action"]["mask"])
    chunk_values = np.where(mask, (a[future] - mean) / (std + 1e-8), a[future])
    s = td["observation", "state"].numpy()[history]
    smean, sstd = np.float32(stats["proprio"]["mean"]), np.float32(stats["proprio"]["std"])
    state = (s - smean) / (sstd + 1e-8)
    state = np.where(np.float32(stats["proprio"]["min"]) == np.float32(stats["proprio"]["max"]),
                     0, state)  # fmt: skip
    return {
        "action": a[history],
        "chunk": chunk_values,
        "action_is_pad": history[:, None] + np.arange(chunk) > end,
        "state": state,
        "timestep_is_pad": np.arange(row - window + 1, row + 1) < start,
        "instruction": list(td["language_instruction"])[row],
    }


def test_items_hold_the_standardized_values_and_batches_are_vla(root):
    from torchrl.data.vla import validate_vla_tensordict

    ds = VLADataset(MIX, root, image_sizes=SIZES, window=2, chunk=3, seed=1)
    items = []
    for index in range(24):
        part, row = ds.draw(index)
        item = ds.item(part, row)
        name = ds.parts[part].name
        want = _expected(root, name, row, 2, 3)
        a = ds.parts[part].opened.meta.action_dim
        np.testing.assert_allclose(item["vla_action", "chunk"][..., :a].numpy(), want["chunk"],
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
        np.testing.assert_array_equal(item["action"][..., :a].numpy(), want["action"])
        np.testing.assert_array_equal(item["action_is_pad"].numpy(), want["action_is_pad"])
        s = want["state"].shape[-1]
        np.testing.assert_allclose(item["observation", "state"][..., :s].numpy(), want["state"],
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
        assert not item["observation", "state"][..., s:].any()  # padded to the mix's width
        assert item["observation", "timestep_is_pad"].tolist() == want["timestep_is_pad"].tolist()
        assert item["language_instruction"] == want["instruction"]
        assert item["dataset_name"] == name
        has_wrist = name == "taco_play"
        assert item["observation", "pad_mask_dict", "wrist"].tolist() == [has_wrist] * 2
        assert item["observation", "image", "primary"].shape == (2, 3, 32, 32)
        assert item["observation", "image", "wrist"].shape == (2, 3, 16, 16)
        if not has_wrist:
            assert not item["observation", "image", "wrist"].any()
        items.append(item)
    batch = ted_collate(items)
    assert batch.batch_size == torch.Size([24])
    assert validate_vla_tensordict(batch) == []
    assert batch["vla_action", "chunk"].shape == (24, 2, 3, 7)
    assert batch["observation", "state"].shape == (24, 2, 8)  # fractal 8-D, taco 7-D padded
    assert {*batch["dataset_name"]} == {"fractal20220817_data", "taco_play"}


def test_sampling_follows_the_balanced_weights(root):
    ds = VLADataset(MIX, root, image_sizes=SIZES)
    weights = mixture_weights(MIX, root)
    draws = np.array([ds.draw(i)[0] for i in range(6000)])
    for part, p in enumerate(ds.parts):
        assert (draws == part).mean() == pytest.approx(weights[p.name], abs=0.03)
    # rows are uniform within a dataset: every kept step of taco (15) is drawn
    taco = next(i for i, p in enumerate(ds.parts) if p.name == "taco_play")
    rows = {ds.draw(i)[1] for i in range(6000) if ds.draw(i)[0] == taco}
    assert rows == set(range(15))


def _key(item):
    item = item.read() if isinstance(item, VLARef) else item  # (an item as the dataset yields it)
    return (item["dataset_name"], item["action"].numpy().tobytes(),
            item["observation", "image", "primary"].numpy().tobytes())  # fmt: skip


def test_ranks_split_an_epoch_and_resume_skips_what_was_delivered(root):
    whole = [_key(x) for x in VLADataset(MIX, root, image_sizes=SIZES, num_samples=30)]
    halves = [
        [
            _key(x)
            for x in VLADataset(MIX, root, image_sizes=SIZES, num_samples=30, rank=r, world_size=2)
        ]  # fmt: skip
        for r in (0, 1)
    ]
    assert sorted(halves[0] + halves[1]) == sorted(whole)
    assert halves[0] == whole[0::2]
    first = VLADataset(MIX, root, image_sizes=SIZES, num_samples=30)
    it = iter(first)
    head = [_key(next(it)) for _ in range(7)]
    state = first.state_dict()
    again = VLADataset(MIX, root, image_sizes=SIZES, num_samples=30)
    again.load_state_dict(state)
    assert head + [_key(x) for x in again] == whole
    with pytest.raises(ConfigError, match="another shard layout or seed"):
        VLADataset(MIX, root, image_sizes=SIZES, seed=5).load_state_dict(state)


@pytest.mark.integration  # DataLoader worker processes
def test_workers_and_persistent_workers_deliver_each_item_once(root):
    from torch.utils.data import DataLoader

    def epoch(ds, e):
        ds.set_epoch(e)
        return sorted(_key(x) for x in ds)

    single = VLADataset(MIX, root, image_sizes=SIZES, num_samples=24)
    want = [epoch(single, 0), epoch(single, 1)]
    ds = VLADataset(MIX, root, image_sizes=SIZES, num_samples=24)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True,
                        collate_fn=no_collate)  # fmt: skip
    got = [sorted(_key(x) for x in loader) for _ in range(2)]
    assert got == want and want[0] != want[1]


@pytest.mark.integration  # DataLoader worker processes
def test_worker_batches_equal_main_process_batches_strings_included(root):
    """#48: the worker path of ted_collate (a shared-memory slot) dropped the strings, so the
    documented loader's batches failed validate_vla_tensordict."""
    from torch.utils.data import DataLoader
    from torchrl.data.vla import validate_vla_tensordict

    def dataset():  # one each: an epoch delivered moves a dataset on to the next
        return VLADataset(MIX, root, image_sizes=SIZES, num_samples=24)

    single = [b.clone() for b in DataLoader(dataset(), batch_size=8, num_workers=0,
                                            collate_fn=ted_collate)]  # fmt: skip
    workers = []
    for batch in DataLoader(dataset(), batch_size=8, num_workers=2, collate_fn=ted_collate):
        assert validate_vla_tensordict(batch) == []
        assert len(batch["language_instruction"]) == len(batch)
        workers.append(batch.clone())

    def items(batches):  # workers split an epoch by item, so batches hold other items
        return sorted((item for b in batches for item in b.unbind(0)), key=_key)

    assert_same_batches(items(workers), items(single))


def test_sizes_must_agree_or_be_given_and_metadata_per_dataset(root):
    with pytest.raises(ConfigError, match="primary view has different sizes") as error:
        VLADataset(MIX, root)
    assert "image_sizes" in error.value.fix
    ds = VLADataset(MIX, root, image_sizes=SIZES, normalization="bounds_q99")
    meta = ds.metadata()
    assert set(meta) == {"fractal20220817_data", "taco_play"}
    stats = dataset_statistics("openx", "taco_play", root=root)
    assert meta["taco_play"].action_dim == 7
    assert torch.allclose(meta["taco_play"].action_low, torch.tensor(stats["action"]["q01"]))
    assert meta["fractal20220817_data"].gripper_mode == "binary"  # rel2abs gives 0/1
    assert meta["taco_play"].gripper_mode == "continuous"  # clipped, not binarized
    part, row = ds.draw(0)
    chunk = ds.item(part, row)["vla_action", "chunk"]
    assert chunk[..., :6].abs().max() <= 1  # q01..q99 to [-1, 1], clipped
    with pytest.raises(ConfigError, match="normalization"):
        VLADataset(MIX, root, image_sizes=SIZES, normalization="z")


def test_a_batch_read_at_once_equals_the_items_collated(root):
    """``batch_size=B`` yields the items ``batch_size=None`` yields, in order, B at a time:
    every leaf and string equal to ``ted_collate`` of the items read one by one (windows over
    episode starts, chunks over ends, a view one dataset lacks, two datasets in a batch);
    the last batch of an epoch is short; resume skips what was delivered."""
    from torchrl.data.vla import validate_vla_tensordict

    def dataset(**kw):
        return VLADataset(MIX, root, image_sizes=SIZES, window=2, chunk=3, num_samples=30,
                          seed=3, **kw)  # fmt: skip

    items = [ref.read() for ref in dataset()]  # each item read alone, then stacked
    whole = [ted_collate(items[i : i + 8]) for i in range(0, 30, 8)]
    refs = list(dataset())  # the default: references, read by ted_collate a batch at once
    assert_same_batches([ted_collate(refs[i : i + 8]) for i in range(0, 30, 8)], whole)
    batched = dataset(batch_size=8)
    assert len(batched) == 4
    got = list(batched)
    assert [len(b) for b in got] == [8, 8, 8, 6]
    assert all(validate_vla_tensordict(b) == [] for b in got)
    assert any(len({*b["dataset_name"]}) == 2 for b in got)  # batches mix the datasets
    assert any(b["observation", "timestep_is_pad"].any() for b in got)
    assert any(b["action_is_pad"].any() for b in got)
    assert_same_batches(got, whole)

    first = dataset(batch_size=8)
    it = iter(first)
    next(it)
    again = dataset(batch_size=8)
    again.load_state_dict(first.state_dict())
    assert_same_batches(list(again), whole[1:])

    # one dataset: each batch's items follow each other, resized straight into its memory
    def one():
        return VLADataset(MIX[:1], root, image_sizes=SIZES, window=2, chunk=3, num_samples=12,
                          seed=3)  # fmt: skip

    alone = [ref.read() for ref in one()]
    refs = list(one())
    assert_same_batches([ted_collate(refs[i : i + 6]) for i in (0, 6)],
                        [ted_collate(alone[i : i + 6]) for i in (0, 6)])  # fmt: skip


def test_a_view_at_its_stored_size_is_read_as_stored_into_the_batch(root):
    """A view delivered at its stored size is decoded straight into the batch, no resize: its
    pixels are the standardized rows' frames (``open_standardized``, read apart from both
    paths), and a batch read at once equals the items read alone, in batches that mix a
    dataset whose view is kept as stored with one whose view is resized."""
    name = "fractal20220817_data"
    stored = open_standardized("openx", name, root=root)["observation", "image", "primary"]
    sizes = {"primary": tuple(stored.shape[-2:]), "wrist": (16, 16)}

    def dataset(**kw):
        return VLADataset(MIX, root, image_sizes=sizes, window=2, num_samples=30, seed=4, **kw)

    refs = list(dataset())
    items = [ref.read() for ref in refs]
    assert_same_batches(list(dataset(batch_size=8)),
                        [ted_collate(items[i : i + 8]) for i in range(0, 30, 8)])  # fmt: skip
    kept = [(ref.row, item) for ref, item in zip(refs, items, strict=True)
            if item["dataset_name"] == name]  # fmt: skip
    assert kept and any(item["dataset_name"] != name for item in items)
    for row, item in kept:
        assert torch.equal(item["observation", "image", "primary"][-1], stored[row])


@pytest.mark.integration  # DataLoader worker processes
def test_batches_read_in_workers_come_through_shared_memory_with_their_strings(root):
    """In a worker a batch is written into the worker's shared-memory slot (sent as the slot,
    not pickled), its strings beside it; each item arrives once, equal to the main process's."""
    from torch.utils.data import DataLoader

    from episode_warehouse.batches import slots as shared_batches

    def dataset(**kw):
        return VLADataset(MIX, root, image_sizes=SIZES, num_samples=40, **kw)

    want = sorted((x.read() for x in dataset()), key=_key)
    loader = DataLoader(dataset(batch_size=8), batch_size=None, num_workers=2,
                        collate_fn=ted_collate)  # fmt: skip
    got, held = [], 0
    for batch in loader:
        assert len(batch["language_instruction"]) == len(batch)
        held = max(held, len(shared_batches._held))  # the batch came as a slot
        got += [item.clone() for item in batch.unbind(0)]
    assert held >= 1
    assert_same_batches(sorted(got, key=_key), want)
