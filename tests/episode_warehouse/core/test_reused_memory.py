"""Reused batch memory: a block comes back only when nothing holds memory of it (a tensor, a
view, a numpy array of it); held ones are never handed out; a forked child keeps none."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
import torch

from episode_warehouse.batches import reuse as reused_memory


def _fill(memory: torch.Tensor, value: int) -> torch.Tensor:
    memory.fill_(value)
    return memory


def test_a_dropped_block_is_handed_out_again():
    first = reused_memory.take(1 << 20)
    where = first.data_ptr()
    del first
    again = reused_memory.take(1 << 20)
    assert again.data_ptr() == where
    smaller = reused_memory.take(1000)  # `again` is held: another block
    assert smaller.data_ptr() != where


def test_memory_still_held_in_any_form_is_never_handed_out():
    block = _fill(reused_memory.take(4096), 7)
    where = block.data_ptr()
    holders = [block[10:20].view(torch.int16), block.numpy()[100:], torch.from_numpy(block.numpy())]
    del block
    for holder in holders:
        others = [_fill(reused_memory.take(4096), 1) for _ in range(reused_memory.KEPT + 2)]
        assert where not in {o.data_ptr() for o in others}
        values = holder.numpy() if isinstance(holder, torch.Tensor) else holder
        assert (values.view(np.uint8) == 7).all()  # not written over
        del others
    del holders, holder, values
    taken = [reused_memory.take(4096) for _ in range(reused_memory.KEPT)]
    assert where in {t.data_ptr() for t in taken}  # free again once nothing holds it


def test_release_drops_the_free_blocks_only():
    held = _fill(reused_memory.take(1 << 16), 3)
    reused_memory.take(1 << 15)  # dropped at once: free
    kept = reused_memory.kept_bytes()
    released = reused_memory.release()
    assert released > 0 and reused_memory.kept_bytes() == kept - released >= 1 << 16
    assert (held == 3).all()
    assert reused_memory.take(1 << 16).data_ptr() != held.data_ptr()  # still held: not reused


def _child_keeps(queue) -> None:
    queue.put(reused_memory.kept_bytes())


@pytest.mark.integration  # a forked child
def test_a_forked_child_starts_with_no_blocks():
    held = reused_memory.take(1 << 16)
    assert reused_memory.kept_bytes() >= 1 << 16
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_keeps, args=(queue,))
    child.start()
    assert queue.get(timeout=60) == 0
    child.join()
    del held
