"""Benchmark: what the catalog's quality signals (#43) cost a partition's catalog stage.

Ours: ``quality_columns`` over a TED-shaped TensorDict (float actions and states, one camera).
Baseline, same data, same run: reading the same action and state arrays once (``np.asarray`` of
each leaf), the least any per-episode signal must do.

    python -m bench.quality [--steps 1000000] [--episodes 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
from tensordict import TensorDict

from bench.measure import median_ms, save_report, scaled
from episode_warehouse.catalog.quality import quality_columns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=scaled(1_000_000, 20000))
    parser.add_argument("--episodes", type=int, default=scaled(2000, 40))
    parser.add_argument("--repeats", type=int, default=scaled(3, 1))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    td = TensorDict(
        {
            "action": torch.from_numpy(rng.normal(size=(args.steps, 7)).astype(np.float32)),
            "observation": {
                "state": torch.from_numpy(rng.normal(size=(args.steps, 8)).astype(np.float32))
            },
        },  # fmt: skip
        batch_size=[args.steps],
    )
    cuts = np.sort(rng.choice(np.arange(1, args.steps), args.episodes - 1, replace=False))
    starts = np.concatenate([[0], cuts])
    lengths = np.diff(np.concatenate([starts, [args.steps]]))
    returns = rng.normal(size=args.episodes)
    ours = median_ms(lambda: quality_columns(td, starts, lengths, returns), args.repeats)
    base = median_ms(
        lambda: [np.asarray(td.get(k)).astype(np.float64) for k in td.keys(True, True)],
        args.repeats,
    )
    report = {
        "steps": args.steps, "episodes": args.episodes, "quality_ms": ours,
        "read_once_ms": base, "ratio": round(ours / base, 2),
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    save_report("quality", report)


if __name__ == "__main__":
    main()
