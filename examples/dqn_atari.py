"""Offline DQN on Atari, straight from the warehouse.

Slices are sampled by a TorchRL replay buffer over a SQL selection of the catalog (episodes
drawn by a weight the SQL computes: better-scoring episodes more often), frames are normalized
with the selection's own statistics (``selection_stats``), and TorchRL's ``DQNLoss`` trains a
small Q-network on them. Only the public API is used: ``select_episodes``, ``replay_buffer``,
``selection_stats``.

    python -m examples.dqn_atari --root demo-data/warehouse --steps 300
    python -m examples.dqn_atari --root gs://my-bucket/wh --device cuda --steps 20000

Prints the loss as it falls, samples/s into the model, and the share of each step spent
waiting for data.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from torch import nn

SQL = """
SELECT source, partition, episode, start, length,
       1 + (percent_rank() OVER (ORDER BY "return")) AS weight   -- 1x to 2x by return
FROM episodes WHERE source = 'atari' AND length >= {slice_len}
"""
ACTIONS = 18  # the ALE's full action set: every game's actions index into it


class QNetwork(nn.Module):
    """Nature-DQN-shaped, smaller: one 84x84 frame in, a value per action out."""

    def __init__(self, actions: int = ACTIONS) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(16, 32, 4, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * 9 * 9, 128),
            nn.ReLU(),
            nn.Linear(128, actions),
        )

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.net(observation.unsqueeze(-3))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("EPISODE_WAREHOUSE_ROOT"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--slice-len", type=int, default=8)
    parser.add_argument("--batch", type=int, default=256, help="transitions per step")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=50)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Train; returns the figures it printed (losses, samples/s, data wait)."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import QValueActor
    from torchrl.objectives import DQNLoss, SoftUpdate

    from episode_warehouse.loading import replay_buffer, select_episodes, selection_stats

    args = parse(argv)
    torch.manual_seed(args.seed)
    selection = select_episodes(SQL.format(slice_len=args.slice_len), root=args.root)
    stats = selection_stats(selection, ["observation"])["observation"]  # over the pixels
    mean = torch.as_tensor(stats["mean"], dtype=torch.float32).to(args.device)
    std = torch.as_tensor(stats["std"], dtype=torch.float32).clamp_min(1.0).to(args.device)
    buffer = replay_buffer(selection, slice_len=args.slice_len, batch_size=args.batch,
                           seed=args.seed)  # fmt: skip
    print(
        f"{len(selection)} episodes, {int(selection.length.sum()):,} steps of "
        f"{len(selection.partitions)} partition(s); sampling {args.batch} transitions a step"
    )

    module = TensorDictModule(QNetwork(), in_keys=["pixels"], out_keys=["action_value"])
    actor = QValueActor(module, in_keys=["pixels"], action_space="categorical").to(args.device)
    loss_fn = DQNLoss(actor, action_space="categorical", delay_value=True)
    loss_fn.make_value_estimator(gamma=0.99)
    target = SoftUpdate(loss_fn, tau=0.01)
    optimizer = torch.optim.Adam(loss_fn.parameters(), lr=args.lr)

    def prepared(batch):
        batch = batch.to(args.device)
        batch["pixels"] = (batch["observation"].float() - mean) / std
        batch["next", "pixels"] = (batch["next", "observation"].float() - mean) / std
        batch["action"] = batch["action"].long()
        return batch.exclude("observation", ("next", "observation"))

    losses, waited, started = [], 0.0, time.perf_counter()
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        batch = prepared(buffer.sample())  # data: sample, move, normalize
        t1 = time.perf_counter()
        loss = loss_fn(batch)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        target.step()
        waited += t1 - t0
        losses.append(float(loss.detach()))
        if step % args.log_every == 0 or step == args.steps:
            seconds = time.perf_counter() - started
            recent = sum(losses[-args.log_every :]) / len(losses[-args.log_every :])
            print(
                f"step {step:5d}  loss {recent:.4f}  {step * args.batch / seconds:,.0f} "
                f"samples/s  waiting for data {waited / seconds:.0%}"
            )
    seconds = time.perf_counter() - started
    return {
        "losses": losses,
        "samples_per_s": args.steps * args.batch / seconds,
        "data_wait": waited / seconds,
    }


if __name__ == "__main__":
    main()
