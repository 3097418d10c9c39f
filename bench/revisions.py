"""Run one benchmark in a checkout of another revision and in this one, in the same run, and
print this revision's figures as ratios of that revision's (the baseline).

    git worktree add ../base 492ee40 && ln -s "$PWD/bench/data" ../base/bench/data
    python -m bench.revisions loading ../base          # bench.loading, base then here, twice

Each run is a fresh process (``python -m bench.NAME``, ``PYTHONPATH`` the checkout), the two
revisions alternating ``--rounds`` times; a figure is each revision's best (rates: the highest).
Only figures both revisions report are compared. A ratio above 1 is faster here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _run(checkout: Path, name: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    subprocess.run(
        [sys.executable, "-m", f"bench.{name}"], cwd=checkout, env=env, check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return json.loads((checkout / "bench" / "results" / f"{name}.json").read_text())


def _best(runs: list[dict]) -> dict:
    keys = set.intersection(*(set(r) for r in runs))
    return {k: max(r[k] for r in runs) for k in keys if all(_number(r[k]) for r in runs)}


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the benchmark module, bench.NAME")
    parser.add_argument("baseline", type=Path, help="a checkout of the baseline revision")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    base, here = [], []
    for _ in range(args.rounds):
        base.append(_run(args.baseline.resolve(), args.name))
        here.append(_run(HERE, args.name))
    b, h = _best(base), _best(here)
    report = {
        k: {"baseline": b[k], "here": h[k], "ratio": round(h[k] / b[k], 3) if b[k] else None}
        for k in sorted(set(b) & set(h))
    }
    print(json.dumps(report, indent=1))
    out = HERE / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.name}-vs-baseline.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
