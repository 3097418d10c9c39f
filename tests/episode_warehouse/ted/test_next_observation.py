"""("next", "observation") as trainers use it: right values, and no memory cliff for the
operations that touch a few rows."""

import threading
import time

import numpy as np
import pytest
import torch

from episode_warehouse.ted.next_view import NextObservation
from episode_warehouse.ted.open import open_ted_folder
from tests.helpers import build_atari


def _heap() -> int:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("RssAnon:")).split()[1]) * 1024


def _peak_heap_growth(fn) -> int:
    """The largest heap (RssAnon) growth while ``fn`` runs, sampled every millisecond: a
    whole-tensor copy that is freed again still shows."""
    base, peak, running = _heap(), [0], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], _heap() - base)
            time.sleep(0.001)

    thread = threading.Thread(target=sample)
    thread.start()
    try:
        fn()
    finally:
        running[0] = False
        thread.join()
    return peak[0]


@pytest.fixture(scope="module")
def ted(tmp_path_factory):
    root = tmp_path_factory.mktemp("next") / "wh"
    build_atari(root, "Pong/2", 2, capacity=4000, episodes=120, lengths=(200, 400))
    return root / "ted" / "atari" / "Pong" / "2"


def _expected(td) -> np.ndarray:
    """Ground truth from the stored frames: frame t+1, zeros on each episode's last step."""
    obs = td["observation"].numpy()
    done = td["next", "done"].numpy()[:, 0]
    out = np.zeros_like(obs)
    out[:-1] = obs[1:]
    out[done] = 0
    return out


def test_values_of_the_operations_trainers_use(ted):
    td = open_ted_folder(ted)
    want = _expected(td)
    nxt = td["next", "observation"]
    assert isinstance(nxt, NextObservation) and tuple(nxt.shape) == want.shape
    idx = torch.tensor([0, 5, len(want) - 1, 17, 17])
    assert np.array_equal(td[idx]["next", "observation"].numpy(), want[idx.numpy()])
    assert np.array_equal(td[10:300]["next", "observation"].numpy(), want[10:300])
    assert np.array_equal(td[42]["next", "observation"].numpy(), want[42])
    stacked = torch.stack([td[0:64], td[500:564]])
    assert np.array_equal(
        stacked["next", "observation"].numpy(), np.stack([want[:64], want[500:564]])
    )
    clone = td[100:200].clone()
    assert np.array_equal(clone["next", "observation"].numpy(), want[100:200])
    assert td.to("cpu")["next", "observation"] is nxt  # same device: nothing copied
    copy = open_ted_folder(ted, next_obs="copy")["next", "observation"]
    assert type(copy) is torch.Tensor and np.array_equal(copy.numpy(), want)
    assert nxt.float().mean().item() == pytest.approx(float(want.astype(np.float64).mean()))
    with pytest.raises(ValueError, match="next_obs"):
        open_ted_folder(ted, next_obs="lazy")


def test_memory_of_slices_is_bounded_by_what_they_read(ted):
    td = open_ted_folder(ted)
    n = td.batch_size[0]
    frame = int(np.prod(td["observation"].shape[1:]))
    assert n * frame > 200 << 20  # the corrected whole tensor would be 200+ MB

    def trainer_reads():
        for start in range(0, n - 256, 997):
            batch = torch.stack([td[start : start + 64], td[start + 64 : start + 128]]).clone()
            batch.to("cpu")
            td[torch.randint(0, n, (256,))]["next", "observation"]
            td[start]["next", "observation"]

    grown = _peak_heap_growth(trainer_reads)
    assert grown < 40 << 20, f"heap grew {grown >> 20} MB"
    # the documented cost of a whole-tensor operation, seen by the same measure
    whole = _peak_heap_growth(lambda: td["next", "observation"].sum())
    assert whole > n * frame * 0.9
