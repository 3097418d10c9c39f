"""``TedStorage`` (what ``replay_buffer`` samples from) gives what TorchRL's ``TensorStorage``
gives over the same TED, on the same samples: Atari (zstd frames, episode ends) and Minari
written by Minari (a JPEG camera, final observations); any index, repeats and a TED's last row
included. The sampler's read of a sample is handed on to the buffer's read of it, never to a
read of other rows, and a batch a trainer holds is never written into."""

from __future__ import annotations

import pickle

import pytest
import torch
from torchrl.data import ReplayBuffer, SliceSampler, TensorStorage

from episode_warehouse.loading import replay_buffer
from episode_warehouse.loading.ted_storage import TedStorage
from episode_warehouse.ted.open import open_ted_and_rows
from tests.episode_warehouse.loading.test_batch_read import _same, minari_root  # noqa: F401

pytestmark = pytest.mark.integration  # TorchRL's buffers start a resource tracker
SLICE = 4


def _storages(root, source: str, partition: str) -> tuple[TensorStorage, TedStorage]:
    td, rows = open_ted_and_rows(source, partition, root)
    assert rows is not None  # a folder root: the batch read is the one under test
    return TensorStorage(td), TedStorage(td, rows)


def _sample(storage, seed: int, slices: int = 8):
    sampler = SliceSampler(slice_len=SLICE, traj_key="episode", strict_length=True)
    torch.manual_seed(seed)
    return ReplayBuffer(storage=storage, sampler=sampler, batch_size=slices * SLICE).sample()


@pytest.fixture(params=["atari", "minari"])
def storages(request, warehouse_root, minari_root):  # noqa: F811
    if request.param == "atari":
        return _storages(warehouse_root, "atari", "Pong/1")
    root, dataset_id = minari_root
    return _storages(root, "minari", dataset_id)


def test_samples_equal_tensor_storage(storages):
    plain, ours = storages
    for seed in range(4):
        _same([_sample(ours, seed)], [_sample(plain, seed)])


def test_any_rows_read_as_tensor_storage_reads_them(storages):
    plain, ours = storages
    n = len(plain)
    for rows in ([0, 0, 5, n - 1, 3, 4, 5, 2], [n - 1], list(range(n))[::-3]):
        index = torch.tensor(rows)
        _same([ours.get(index)], [plain.get(index)])
        _same([ours.get((index.int(),))], [plain.get((index.int(),))])


def test_other_indexes_are_read_by_tensor_storage(storages):
    plain, ours = storages
    n = len(plain)
    mask = torch.arange(n) % 3 == 0
    for index in (slice(2, 9), mask, torch.tensor([-1, 0]), 7):
        _same([ours.get(index)], [plain.get(index)])


def test_the_samplers_read_is_handed_on_once_and_only_for_the_same_rows(storages):
    plain, ours = storages
    index, other = torch.tensor([3, 4, 5, 6]), torch.tensor([4, 5, 6, 7])
    first = ours[index]
    assert ours.get(index) is first  # the buffer's read of the sampler's rows
    again = ours.get(index)
    assert again is not first  # handed on once: a later read reads again
    _same([again], [first])
    ours[index]
    _same([ours.get(other)], [plain.get(other)])  # other rows are never the held batch


def test_a_batch_held_by_the_trainer_is_never_written_into(storages):
    plain, ours = storages
    n = len(plain)
    held = ours.get(torch.arange(0, 8))
    want = held.clone()
    for start in range(1, min(n - 8, 12)):
        ours.get(torch.arange(start, start + 8))
    _same([held], [want])


def test_a_pickled_storage_reads_the_same(storages):
    plain, ours = storages
    copy = pickle.loads(pickle.dumps(ours))
    _same([_sample(copy, 5)], [_sample(plain, 5)])


def test_replay_buffer_samples_through_it(warehouse_root):
    rb = replay_buffer([("atari", "Pong/1")], slice_len=SLICE, batch_size=8 * SLICE,
                       root=warehouse_root)  # fmt: skip
    assert isinstance(rb.storage, TedStorage)
    plain, _ = _storages(warehouse_root, "atari", "Pong/1")
    torch.manual_seed(9)
    got = rb.sample()
    _same([got], [_sample(plain, 9)])
