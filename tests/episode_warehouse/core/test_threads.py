"""The one sizing rule counts the cores this process may run on, not the host's."""

from __future__ import annotations

import os

import pytest

from episode_warehouse.threads import compute_threads, usable_cores
from episode_warehouse.workers import default_processes


@pytest.fixture
def one_core():
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def test_an_affinity_mask_of_one_core_means_one_thread(one_core):
    assert usable_cores() == 1
    assert compute_threads() == 1 and compute_threads(most=4) == 1
    assert default_processes(reserve=1) == 1  # never fewer than one


def test_caps_and_reserves():
    cores = len(os.sched_getaffinity(0))
    assert compute_threads() == cores
    assert compute_threads(most=1) == 1
    assert compute_threads(reserve=cores + 5) == 1
    assert default_processes(most=8) == min(8, cores)
