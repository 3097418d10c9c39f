"""Batches stacked in DataLoader workers into reused shared memory (shared_batches).

Expectations come from the main process: the same slices stacked there (num_workers=0), and
the kernel's own account of which shared-memory file backs a batch (/proc/self/maps).
"""

import os

import pytest
import torch
from torch.utils.data import DataLoader

from episode_warehouse.batches.slots import MAX_SLOTS
from episode_warehouse.loading import EpisodeStream, select_episodes, ted_collate

pytestmark = pytest.mark.integration  # DataLoader workers

# 8 episodes: 839 steps, 208 slices, 104 batches an epoch, more than 4x the slots of all workers
ALL = (
    "SELECT source, partition, episode, start, length FROM episodes "
    "ORDER BY partition, episode LIMIT 8"
)
SLICE, BATCH, WORKERS = 4, 2, 2


def _key(item) -> tuple[int, int]:
    """A slice's selection row and first step (batches are made per worker, slices are not)."""
    return int(item["selection_index"][0]), int(item["step"][0])


def _loader(warehouse_root, workers, collate=ted_collate, context=None):
    stream = EpisodeStream(
        select_episodes(ALL, root=warehouse_root), SLICE, shuffle=False, drop_last=True
    )
    return DataLoader(
        stream,
        batch_size=BATCH,
        num_workers=workers,
        collate_fn=collate,
        multiprocessing_context=context if workers else None,
        persistent_workers=workers > 0,
    )


@pytest.fixture(scope="module")
def reference(warehouse_root):
    slices = [item.clone() for batch in _loader(warehouse_root, 0) for item in batch.unbind(0)]
    return {_key(item): item for item in slices}


def _same(batch, reference) -> bool:
    """Every slice of the batch equals the reference slice, leaf by leaf (strings too)."""
    from tests.helpers import assert_same_batches

    items = batch.unbind(0)
    assert_same_batches(items, [reference[_key(item)] for item in items])
    return True


def _backing_file(tensor: torch.Tensor) -> str:
    """The device:inode of the mapping that holds the tensor's first byte, from the kernel."""
    address = tensor.data_ptr()
    with open("/proc/self/maps") as fh:
        for line in fh:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                return f"{fields[3]}:{fields[4]}"
    raise LookupError(hex(address))


@pytest.mark.parametrize("context", [
    "fork",
    pytest.param("forkserver", marks=pytest.mark.slow(
        reason="a third start method, ~8 s: fork (Linux's default) and spawn (torchrl's) stay "
        "in the default tier, whose 10 minutes it overran")),
    "spawn",  # torchrl's default
])  # fmt: skip
def test_worker_batches_equal_main_process_batches_and_reuse_a_few_slots(
    warehouse_root, reference, context
):
    loader = _loader(warehouse_root, WORKERS, context=context)
    for epoch in range(2):  # persistent workers: the second epoch reuses the first's slots
        files, seen, batches = set(), [], 0
        for batch in loader:
            assert _same(batch, reference)
            files.add(_backing_file(batch["observation"]))
            seen += [_key(item) for item in batch.unbind(0)]
            batches += 1
            del batch  # dropped: its slot goes back to its worker
        assert sorted(seen) == sorted(reference), epoch  # every slice once
        assert batches > 4 * WORKERS * MAX_SLOTS
        # torch's own path maps a fresh segment per batch; slots keep to a few per worker
        assert len(files) <= WORKERS * MAX_SLOTS, (epoch, len(files), batches)


def test_batches_the_trainer_keeps_are_never_written_over(warehouse_root, reference):
    """Holding every batch of an epoch (more than all slots): none is reused under the trainer,
    the workers fall back to fresh memory, and every kept batch still equals its reference."""
    kept = list(_loader(warehouse_root, WORKERS))
    assert sum(b.batch_size[0] for b in kept) == len(reference)
    assert len(kept) > WORKERS * MAX_SLOTS
    assert all(_same(b, reference) for b in kept)
    assert len({_backing_file(b["observation"]) for b in kept}) == len(kept)


def doubled_reward(items):
    """A collate that changes ted_collate's batch in the worker."""
    batch = ted_collate(items)
    batch["doubled"] = batch["next", "reward"] * 2
    batch["observation"] = batch["observation"] + 1
    return batch


def test_a_collate_that_changes_the_batch_in_the_worker_gets_its_change(warehouse_root, reference):
    count = 0
    for batch in _loader(warehouse_root, WORKERS, collate=doubled_reward, context="forkserver"):
        for item in batch.unbind(0):
            want = reference[_key(item)]
            assert torch.equal(item["doubled"], want["next", "reward"] * 2)
            assert torch.equal(item["observation"], want["observation"] + 1)
            assert torch.equal(item["next", "observation"], want["next", "observation"])
        count += batch.batch_size[0]
    assert count == len(reference)


class _Labelled(torch.utils.data.Dataset):
    """Items with strings beside tensors, nested too (an instruction, a dataset's name)."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        from tensordict import TensorDict

        td = TensorDict({"x": torch.full((3,), i), "obs": {"s": torch.tensor([i, -i])}}, [])
        td.set_non_tensor("language_instruction", f"pick {i}")
        td.set_non_tensor(("obs", "camera"), f"cam{i % 3}")
        return td


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_worker_batches_keep_their_strings(context):
    """#48: a slot batch held the tensors only; the strings (TorchRL's VLA instruction) were
    dropped in workers and kept with num_workers=0."""
    from tests.helpers import assert_same_batches

    def batches(workers):
        loader = DataLoader(_Labelled(), batch_size=4, num_workers=workers,
                            collate_fn=ted_collate,
                            multiprocessing_context=context if workers else None)  # fmt: skip
        return [b.clone() for b in loader]

    want = batches(0)
    assert want[0]["language_instruction"] == ["pick 0", "pick 1", "pick 2", "pick 3"]
    assert_same_batches(batches(2), want)


def _slot_worker(conn, batches: int, labelled_from: int | None = None) -> None:
    """A worker's side, by hand: batches written into slots and sent as DataLoader sends them
    (ForkingPickler), each once the trainer has dropped the one before; from batch
    ``labelled_from`` on, a string is set on the batch after it was filled (as a collate
    wrapping ``ted_collate`` may)."""
    from multiprocessing.reduction import ForkingPickler

    from tensordict import TensorDict

    from episode_warehouse.batches.buffers import Buffer, view_of
    from episode_warehouse.batches.slots import fill_slot

    buffer = Buffer(("x",), (4, 3), torch.int64)
    for k in range(batches):

        def fill(memory, k=k):
            leaf = view_of(memory[("x",)], buffer)
            leaf.fill_(k)
            return TensorDict({"x": leaf}, [4])

        batch = fill_slot([buffer], fill)
        if labelled_from is not None and k >= labelled_from:
            batch.set_non_tensor("note", f"late {k}")
        conn.send_bytes(bytes(ForkingPickler.dumps(batch)))
        del batch
        conn.recv()


def test_a_slot_is_passed_once_then_its_batches_travel_by_name():
    """#58: passing a slot's file descriptor again for every batch cost the trainer a fifth of
    a core; the main process now maps each slot once and later batches name it. Every batch
    still holds its own values, and the slot comes back once the trainer drops a batch."""
    import multiprocessing
    from multiprocessing.reduction import ForkingPickler

    from episode_warehouse.batches import slots as shared_batches

    batches = 8
    # spawned, not forked: a fork of a process whose OpenMP threads have run deadlocks in the
    # child's first parallel copy (DataLoader workers avoid it with set_num_threads(1))
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    worker = spawn.Process(target=_slot_worker, args=(theirs, batches))
    worker.start()
    carrying = []
    for k in range(batches):
        assert ours.poll(120), f"no batch {k} from the worker (exit code {worker.exitcode})"
        message = ours.recv_bytes()
        carrying.append(b"rebuild_storage" in message)  # torch's storage: a descriptor passed
        batch = ForkingPickler.loads(message)
        assert torch.equal(batch["x"], torch.full((4, 3), k))
        del batch
        ours.send(1)
    worker.join(timeout=60)
    assert worker.exitcode == 0
    # the batch before is seen dropped when the next arrives: two slots take turns, each passed
    # with its first batch only
    assert carrying == [True, True] + [False] * (batches - 2)
    assert sum(pool.startswith(f"{worker.pid}-") for pool, _ in shared_batches._mapped) == 2
    # a batch that names its slot, read by a process that never received the slot: refused
    answer, asked = spawn.Pipe()
    other = spawn.Process(target=_load_elsewhere, args=(asked, message))
    other.start()
    assert answer.poll(120), f"no answer (exit code {other.exitcode})"
    refusal = answer.recv()
    other.join(timeout=60)
    assert "never received" in refusal and "clone()" in refusal, refusal


def test_a_string_set_on_a_slot_batch_after_it_was_filled_travels_with_it():
    """A batch is checked before it leaves its worker (one walk over its leaves, #58): a
    string set on it after filling is not in the slot's layout, so the batch travels as a
    copy, string and all, and its slot is reused at once."""
    import multiprocessing
    from multiprocessing.reduction import ForkingPickler

    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    worker = spawn.Process(target=_slot_worker, args=(theirs, 3, 1))
    worker.start()
    notes = []
    for k in range(3):
        assert ours.poll(120), f"no batch {k} from the worker (exit code {worker.exitcode})"
        batch = ForkingPickler.loads(ours.recv_bytes())
        assert torch.equal(batch["x"], torch.full((4, 3), k))
        note = batch.get("note", None)  # a NonTensorData, or None
        notes.append(None if note is None else note.data)
        del batch
        ours.send(1)
    worker.join(timeout=60)
    assert worker.exitcode == 0
    assert notes == [None, "late 1", "late 2"]


def _load_elsewhere(conn, message: bytes) -> None:
    from multiprocessing.reduction import ForkingPickler

    from episode_warehouse.errors import ConfigError

    try:
        ForkingPickler.loads(message)
    except ConfigError as exc:
        conn.send(str(exc))
    else:
        conn.send("loaded")


def test_the_slots_of_workers_that_have_exited_are_not_kept_mapped(warehouse_root):
    """Workers that end with each epoch (persistent_workers=False) leave no mapping behind
    in the main process beyond the last epoch's workers'."""
    from episode_warehouse.batches import slots as shared_batches

    stream = EpisodeStream(select_episodes(ALL, root=warehouse_root), SLICE, shuffle=False,
                           drop_last=True)  # fmt: skip
    loader = DataLoader(stream, batch_size=BATCH, num_workers=WORKERS, collate_fn=ted_collate)
    for _ in range(3):
        for batch in loader:
            del batch
    pids = {mapped.pid for mapped in shared_batches._mapped.values()}
    assert 1 <= len(pids) <= WORKERS, pids


def test_the_slots_of_a_job_killed_whole_are_swept_by_the_next(tmp_path, monkeypatch):
    """Under torch's file_system strategy a SIGKILL of the whole job left its workers' slots in
    /dev/shm (#69); the next worker's pool removes the files of processes that are gone, and
    nothing of a live process or of anything else."""
    import torch.multiprocessing as mp

    from episode_warehouse.batches.slots import sweep_dead_segments

    gone = int(open("/proc/sys/kernel/pid_max").read())  # never a live pid  # noqa: SIM115
    names = [f"torch_{gone}_123_0", f"torch_{gone}_123_1", f"torch_{os.getpid()}_9_0",
             "torch_notapid_1_0", "other_file"]  # fmt: skip
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert sweep_dead_segments(str(tmp_path)) == 0  # file_descriptor: nothing has a name
    monkeypatch.setattr(mp, "get_sharing_strategy", lambda: "file_system")
    assert sweep_dead_segments(str(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])
