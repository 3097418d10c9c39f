"""Round trip: simulated Dopamine logs -> decode -> TED equals the simulator's ground truth."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.sources.atari.decode import decode_run
from episode_warehouse.ted import build_ted, open_ted_folder
from tests.episode_warehouse.sources.atari.truth import expected_fragments, recovered_rows
from warehouse_fixtures.atari_game import play_episode
from warehouse_fixtures.dopamine_writer import write_run


def _decode(tmp_path, replay, suffixes, workers=1):
    dec, ted = tmp_path / "dec", tmp_path / "ted"
    dec.mkdir(parents=True)
    ted.mkdir()
    decode_run(replay, suffixes, dec, workers=workers)
    build_ted(open_decoded(dec), ted)
    return open_decoded(dec), open_ted_folder(ted)


def _check_against_truth(truth, capacity, suffixes, decoded, td):
    rows = recovered_rows(truth, capacity, suffixes)
    frags = expected_fragments(truth, rows)
    eps = decoded.episodes().to_pylist()
    assert [e["length"] for e in eps] == [f.length for f in frags]
    assert td.batch_size[0] == sum(f.length for f in frags)
    obs = td["observation"].numpy()
    nxt = td["next", "observation"][:].numpy()
    action, reward = td["action"].numpy(), td["next", "reward"].numpy()[:, 0]
    terminated = td["next", "terminated"].numpy()[:, 0]
    done, truncated = td["next", "done"].numpy()[:, 0], td["next", "truncated"].numpy()[:, 0]
    for ep, frag in zip(eps, frags, strict=True):
        src = truth.episodes[frag.episode]
        sl = slice(ep["start"], ep["start"] + ep["length"])
        steps = slice(frag.first_step, frag.first_step + frag.length)
        np.testing.assert_array_equal(obs[sl], src.observation[steps])
        np.testing.assert_array_equal(action[sl], src.action[steps])
        np.testing.assert_array_equal(reward[sl], src.reward[steps])
        np.testing.assert_array_equal(terminated[sl], src.terminal[steps] == 1)
        np.testing.assert_array_equal(nxt[sl][:-1], src.observation[steps][1:])
        assert not nxt[sl][-1].any()
        assert done[sl].tolist() == [False] * (frag.length - 1) + [True]
        np.testing.assert_array_equal(truncated[sl], done[sl] & ~terminated[sl])
        assert td["is_init"][sl].tolist() == [True] + [False] * (frag.length - 1)
        assert ep["return"] == pytest.approx(float(src.reward[steps].sum()))
        assert ep["terminated"] == bool(src.terminal[steps][-1])
        # never claims a start it cannot prove; always finds one whose padding is present
        if ep["true_start"]:
            assert frag.first_step == 0
        if frag.first_step == 0 and frag.follows_present_row:
            assert ep["true_start"]
    assert not td["done"].any() and not td["terminated"].any()


def _random_run(tmp_path, seed):
    rng = np.random.default_rng(seed)
    capacity = int(rng.integers(12, 160))
    lengths = rng.integers(1, max(2, capacity // 2), size=int(rng.integers(3, 40)))
    # every episode ends with terminal=1 (game over and time limit alike); only the last one
    # may be cut by the end of training
    last_over = bool(rng.random() < 0.5)
    episodes = [
        play_episode(rng, int(n), game_over=i < len(lengths) - 1 or last_over)
        for i, n in enumerate(lengths)
    ]
    truth = write_run(
        tmp_path / "replay_logs",
        episodes,
        capacity,
        seed=seed,
        final_log=bool(rng.random() < 0.8),
        compresslevel=1,
    )
    return rng, capacity, truth


@pytest.mark.parametrize("seed", range(40))
def test_random_runs_and_subsets_decode_to_ground_truth(tmp_path, seed):
    rng, capacity, truth = _random_run(tmp_path, seed)
    n_logs = len(truth.log_counts)
    if n_logs == 0:
        pytest.skip("run too short to log anything")
    subset = sorted(rng.choice(n_logs, size=int(rng.integers(1, n_logs + 1)), replace=False))
    final = truth.final_suffix
    if final is not None and final in subset and final > 0 and final - 1 not in subset:
        with pytest.raises(CorruptInputError, match=f"include checkpoint {final - 1}"):
            _decode(tmp_path / "refused", tmp_path / "replay_logs", [int(s) for s in subset])
        subset.append(final - 1)
        subset.sort()
    if final is not None and final in subset and final > 0:
        lap_lost_before_final = truth.log_counts[final] - truth.log_counts[final - 1] >= capacity
        if lap_lost_before_final:  # its place cannot be proven: refused, as the spec allows
            with pytest.raises(CorruptInputError, match="cannot be proven"):
                _decode(tmp_path / "refused2", tmp_path / "replay_logs", [int(s) for s in subset])
            subset.remove(final)
    if not subset:
        return
    decoded, td = _decode(tmp_path, tmp_path / "replay_logs", [int(s) for s in subset])
    _check_against_truth(truth, capacity, [int(s) for s in subset], decoded, td)


def test_lost_lap_is_detected_and_episodes_after_it_start_true(tmp_path):
    # capacity 10: padding of the second episode jumps over add_count 19 (19 % 10 == 9)
    rng = np.random.default_rng(0)
    lengths = [13, 6, 30, 4, 9]
    episodes = [play_episode(rng, n) for n in lengths]
    truth = write_run(tmp_path / "replay_logs", episodes, 10)
    decoded, td = _decode(tmp_path, tmp_path / "replay_logs", list(range(len(truth.log_counts))))
    counts = truth.log_counts
    assert any(b - a >= 20 for a, b in zip(counts[:-2], counts[1:-1], strict=False)), counts
    assert decoded.meta.extra["lost_rows"] > 0
    assert any(g["kind"] == "lost_lap" for g in decoded.meta.extra["gaps"])
    _check_against_truth(truth, 10, list(range(len(counts))), decoded, td)


@pytest.mark.integration  # decode worker processes
def test_parallel_workers_give_identical_frames(tmp_path):
    rng = np.random.default_rng(3)
    episodes = [play_episode(rng, int(n)) for n in rng.integers(10, 80, size=30)]
    write_run(tmp_path / "replay_logs", episodes, 150, compresslevel=1, final_log=False)
    n = len(list((tmp_path / "replay_logs").glob("add_count_ckpt.*.gz")))
    _, one = _decode(tmp_path / "a", tmp_path / "replay_logs", list(range(n)), workers=1)
    _, two = _decode(tmp_path / "b", tmp_path / "replay_logs", list(range(n)), workers=2)
    assert torch.equal(one["observation"], two["observation"])
    assert (one == two).all()
