"""The read-ahead of a stream over a bucket: how deep it reads, in what order it hands over,
how much it holds, and where a failed fetch surfaces."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from episode_warehouse.loading.read_ahead import MAX_DEPTH, MIN_DEPTH, ReadAhead, depth_for


def test_the_depth_is_a_number_of_steps_made_episodes():
    assert depth_for(1024, np.full(160, 40)) == 25  # the benchmark's 40-step episodes
    assert depth_for(1024, np.array([40, 40, 300])) == 25  # the median length counts
    assert depth_for(1024, np.full(10, 300)) == MIN_DEPTH  # DROID-long: 4, not 3
    assert depth_for(1024, np.full(10, 2)) == MAX_DEPTH  # bounded, however short
    assert depth_for(0, np.full(10, 40)) == 0  # memory-mapped rows: no thread
    assert depth_for(1024, np.array([], dtype=np.int64)) == 0  # nothing comes


def test_episodes_come_in_order_and_at_most_depth_wait_unconsumed():
    started: list[int] = []
    lock = threading.Lock()

    def fetch(key: int) -> int:
        with lock:
            started.append(key)
        return key * 10

    keys, depth = list(range(40)), 6
    with ReadAhead(fetch, keys, depth, threads=3) as ahead:
        for taken, key in enumerate(keys, start=1):
            assert ahead.take(key) == key * 10
            with lock:  # what was fetched: those taken and at most `depth` more
                assert len(started) <= taken + depth
    assert sorted(started) == keys


def test_a_failed_fetch_is_raised_at_its_episode_and_an_out_of_order_take_is_refused():
    def fetch(key: int) -> int:
        if key == 3:
            raise OSError("episode 3: connection reset")
        return key

    with ReadAhead(fetch, range(6), depth=4) as ahead:
        assert [ahead.take(k) for k in range(3)] == [0, 1, 2]
        with pytest.raises(OSError, match="episode 3"):
            ahead.take(3)
    with ReadAhead(fetch, range(6), depth=2) as ahead, pytest.raises(RuntimeError, match="order"):
        ahead.take(1)
