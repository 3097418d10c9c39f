"""Behaviour cloning on robot data, straight from the warehouse.

Each sample is one step of an OpenX (or LeRobot) dataset with the chunk of the next
``--chunk`` actions, cut by ``StepWindowDataset`` (windows never cross an episode; padded steps
are flagged and left out of the loss). Episodes are drawn by a mixture weight the SQL computes
(here: drawer episodes three times as often as the rest), and the run resumes mid-epoch from a
saved state: the draws of an epoch are fixed by the seed and the epoch, so a resumed run skips
the batches already trained on and continues with the same ones an uninterrupted run would
have seen. Only the public API is used: ``select_episodes``, ``StepWindowDataset``,
``selection_stats``, ``no_collate``. Every action leaf is normalized by its statistics but
booleans (kept as 0/1): an integer leaf (a discrete mode, 0..255) would otherwise dominate the
loss.

With ``--mix`` it trains instead on a mixture of robots (``VLADataset``: standardized OXE
datasets, each normalized by its own statistics, sampled by Octo's balanced weights): the
padded state, the primary view resized, and the normalized chunk of actions, padded actions
and padded action dimensions left out of the loss; a resumed run continues the dataset where it
stopped (``state_dict``).

    python -m examples.bc_robot --root demo-data/warehouse --partition bridge --steps 200
    python -m examples.bc_robot ... --state ckpt.pt --stop-after 50   # then again: resumes
    python -m examples.bc_robot --root gs://my-bucket/wh --device cuda --workers 4
    python -m examples.bc_robot --root mix-wh --mix fractal20220817_data,taco_play,viola

Prints the loss as it falls, samples/s into the model, and the share of each step spent
waiting for data.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler

SQL = """
SELECT source, partition, episode, start, length,
       CASE WHEN language_instruction ILIKE '%drawer%' THEN 3.0 ELSE 1.0 END AS weight
FROM episodes WHERE source = ? AND partition = ?
"""
STATE = ("observation", "state")


class WeightedBatches(Sampler):
    """Batches of step indices of one epoch: each step drawn with probability proportional to
    its episode's weight over the episode's length (so episodes weigh by the SQL weight, not by
    their length), fixed by ``seed`` and ``epoch``; ``skip`` drops the first batches (a
    resumed run)."""

    def __init__(self, lengths, weights, batch: int, batches: int, seed: int) -> None:
        lengths = torch.as_tensor(lengths, dtype=torch.int64)
        per_step = torch.as_tensor(weights, dtype=torch.float64) / lengths
        self.weights = torch.repeat_interleave(per_step, lengths)
        self.batch, self.batches, self.seed = batch, batches, seed
        self.epoch, self.skip = 0, 0

    def __len__(self) -> int:
        return self.batches - self.skip

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        draws = torch.multinomial(
            self.weights, self.batch * self.batches, replacement=True, generator=generator
        ).reshape(self.batches, self.batch)
        yield from draws[self.skip :].tolist()


class Policy(nn.Module):
    """The state and a small view of the first camera in, a chunk of actions out."""

    def __init__(self, state_dim: int, action_dim: int, chunk: int, channels: int) -> None:
        super().__init__()
        self.camera = nn.Sequential(
            nn.Conv2d(channels, 16, 5, stride=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
        )
        self.head = nn.Sequential(
            nn.Linear(16 * 16 + state_dim, 256), nn.ReLU(), nn.Linear(256, chunk * action_dim)
        )
        self.chunk, self.action_dim = chunk, action_dim

    def forward(self, state: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        features = torch.cat([self.camera(image), state], -1)
        return self.head(features).reshape(-1, self.chunk, self.action_dim)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("EPISODE_WAREHOUSE_ROOT"))
    parser.add_argument("--source", default="openx")
    parser.add_argument("--partition", default="bridge")
    parser.add_argument("--camera", default=None, help="observation key of the camera")
    parser.add_argument("--chunk", type=int, default=8, help="actions predicted per step")
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps in all")
    parser.add_argument("--steps-per-epoch", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--state", type=Path, help="save here; resume from it when it exists")
    parser.add_argument("--stop-after", type=int, help="stop (saving) after this many steps")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--mix", help="comma-separated standardized datasets: a VLADataset mixture")
    parser.add_argument("--image-size", type=int, default=64, help="--mix: primary view size")
    return parser.parse_args(argv)


def _camera(td, name: str | None) -> tuple[str, ...]:
    """The camera's key: ``name``, else the first image under ``observation``."""
    if name:
        return ("observation", *name.split("/"))
    for key in td.keys(True, True):
        if isinstance(key, tuple) and key[0] == "observation" and td.get(key).ndim == 4:
            return key
    raise SystemExit("no camera in the TED: pass --camera")


def _action_keys(td) -> list:
    """What the data calls its action: ``action`` itself, or every numeric leaf under it (OXE's
    bridge: world_vector, rotation_delta, open_gripper, terminate_episode), flattened side by
    side into one vector."""
    if "action" in td and not hasattr(td.get("action"), "keys"):
        return ["action"]
    keys = sorted(k for k in td.keys(True, True) if isinstance(k, tuple) and k[0] == "action")
    if not keys:
        raise SystemExit("the TED has no action: pick another partition")
    return keys


def _report(done: int, losses: list, args, started: float, waited: float) -> None:
    seconds = time.perf_counter() - started
    recent = losses[-args.log_every :]
    print(
        f"step {done:5d}  loss {sum(recent) / len(recent):.4f}  "
        f"{len(losses) * args.batch / seconds:,.0f} samples/s  "
        f"waiting for data {waited / seconds:.0%}"
    )


def _fit(args, policy, optimizer, done: int, loader_at, prepared, on_batch=None):
    """Optimizer steps from ``done`` to the stop: each pass over ``loader_at(done)``, each batch
    into (state, image, target, mask) by ``prepared``, the squared error averaged over what the
    mask keeps (padded steps past an episode's end, padded dimensions). Returns the losses, the
    steps done, and the seconds spent waiting for data and in all."""
    losses, started, waited = [], time.perf_counter(), 0.0
    stop = min(args.steps, args.stop_after or args.steps)
    while done < stop:
        t0 = time.perf_counter()
        for batch in loader_at(done):
            state, image, target, real = prepared(batch)
            t1 = time.perf_counter()
            error = (policy(state, image) - target).pow(2)
            real = real.expand_as(error)
            loss = (error * real).sum() / real.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            waited += t1 - t0
            losses.append(float(loss.detach()))
            if on_batch is not None:
                on_batch(batch)
            done += 1
            if done % args.log_every == 0 or done == stop:
                _report(done, losses, args, started, waited)
            t0 = time.perf_counter()
            if done >= stop:
                break
    return losses, done, waited, time.perf_counter() - started


def _load(args, policy, optimizer) -> dict:
    if args.state is None or not args.state.exists():
        return {"steps": 0}
    saved = torch.load(args.state, weights_only=False)
    policy.load_state_dict(saved["policy"])
    optimizer.load_state_dict(saved["optimizer"])
    print(f"resumed from {args.state} at step {saved['steps']}")
    return saved


def train_mixture(args) -> dict:
    """Behaviour cloning on a mixture of robots (``--mix``), through ``VLADataset``."""
    from episode_warehouse.loading import ted_collate
    from episode_warehouse.standardized import VLADataset, mixture_weights

    mix = [(name.strip(), 1.0) for name in args.mix.split(",") if name.strip()]
    size = (args.image_size, args.image_size)
    dataset = VLADataset(mix, args.root, image_sizes={"primary": size}, chunk=args.chunk,
                         views=("primary",), seed=args.seed,
                         num_samples=args.batch * args.steps_per_epoch)  # fmt: skip
    weights = mixture_weights(mix, args.root)
    policy = Policy(dataset.state_dim, dataset.action_dim, args.chunk, 3).to(args.device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    saved = _load(args, policy, optimizer)
    done = saved["steps"]
    if "dataset" in saved:
        dataset.load_state_dict(saved["dataset"])
    print("mixture: " + ", ".join(f"{n} {w:.2f}" for n, w in weights.items())
          + f"; state {dataset.state_dim}-D, actions {dataset.action_dim}-D in chunks of "
          f"{args.chunk}, {args.batch} a batch")  # fmt: skip

    def prepared(batch):
        batch = batch.to(args.device)
        state = batch["observation", "state"][:, 0]
        image = batch["observation", "image", "primary"][:, 0].float() / 255.0
        target = batch["vla_action", "chunk"][:, 0]  # (B, K, A): padded steps, padded dims out
        real = (~batch["action_is_pad"][:, 0]).unsqueeze(-1) & ~batch["action_dim_is_pad"][:, None]
        return state, image, target, real

    def loader_at(done: int) -> DataLoader:
        return DataLoader(dataset, batch_size=args.batch, num_workers=args.workers,
                          collate_fn=ted_collate)  # fmt: skip

    losses, done, waited, seconds = _fit(args, policy, optimizer, done, loader_at, prepared)
    if args.state is not None:
        torch.save({"policy": policy.state_dict(), "optimizer": optimizer.state_dict(),
                    "steps": done, "dataset": dataset.state_dict()}, args.state)  # fmt: skip
    return {
        "losses": losses,
        "samples_per_s": len(losses) * args.batch / max(seconds, 1e-9),
        "data_wait": waited / max(seconds, 1e-9),
    }


def main(argv: list[str] | None = None) -> dict:
    """Train (or resume); returns the figures it printed and the batches it trained on."""
    args = parse(argv)
    torch.manual_seed(args.seed)
    if args.mix:
        return train_mixture(args)
    return train_partition(args)


def train_partition(args) -> dict:
    """Behaviour cloning on one partition through ``StepWindowDataset``."""
    from episode_warehouse import open_ted
    from episode_warehouse.loading import (
        StepWindowDataset,
        no_collate,
        select_episodes,
        selection_stats,
    )
    from episode_warehouse.loading.windows import pad_key

    selection = select_episodes(SQL, root=args.root, params=[args.source, args.partition])
    td = open_ted(args.source, args.partition, root=args.root)
    camera = _camera(td, args.camera)
    actions = _action_keys(td)
    states = [STATE] if STATE in td.keys(True, True) else []  # else: the camera alone
    dataset = StepWindowDataset(
        selection,
        {**{k: [0] for k in states}, camera: [0], **{k: list(range(args.chunk)) for k in actions}},
    )
    # every leaf but booleans is normalized: an integer action (a discrete mode) included
    measured = [k for k in (*states, *actions) if td.get(k).dtype != torch.bool]
    stats = selection_stats(selection, measured)
    norm = {
        key: (
            torch.as_tensor(stats[key]["mean"], dtype=torch.float32).to(args.device),
            torch.as_tensor(stats[key]["std"], dtype=torch.float32).clamp_min(1e-3).to(args.device),
        )
        for key in measured
    }

    def normalized(batch, key, steps):
        values = batch[key].float()
        if key in norm:
            mean, std = norm[key]
            values = (values - mean) / std
        return values.reshape(values.shape[0], steps, -1)

    sampler = WeightedBatches(
        selection.length, selection.weight, args.batch, args.steps_per_epoch, args.seed
    )
    probe = dataset.__getitems__([0])
    state_dim = sum(normalized(probe, k, 1).shape[-1] for k in states)
    action_dim = sum(normalized(probe, k, args.chunk).shape[-1] for k in actions)
    policy = Policy(state_dim, action_dim, args.chunk, probe[camera].shape[-3]).to(args.device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    done = _load(args, policy, optimizer)["steps"]
    print(
        f"{len(selection)} episodes, {len(dataset):,} steps of {args.source}:{args.partition}; "
        f"camera {'/'.join(camera)}, chunks of {args.chunk} actions, {args.batch} a batch"
    )

    def prepared(batch):
        batch = batch.to(args.device)
        rows = batch.batch_size[0]
        state = torch.cat(
            [normalized(batch, k, 1)[:, 0] for k in states] or [torch.zeros(rows, 0)], -1
        )
        image = batch[camera][:, 0].float() / 255.0
        target = torch.cat([normalized(batch, k, args.chunk) for k in actions], -1)
        return state, image, target, (~batch[pad_key(actions[0])]).unsqueeze(-1)

    def loader_at(done: int) -> DataLoader:
        sampler.epoch, sampler.skip = divmod(done, args.steps_per_epoch)
        return DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=no_collate,  # StepWindowDataset gathers a whole batch at once
            num_workers=args.workers,
        )

    trained_on: list = []
    losses, done, waited, seconds = _fit(
        args, policy, optimizer, done, loader_at, prepared,
        on_batch=lambda batch: trained_on.append(batch["selection_index"].tolist()),
    )  # fmt: skip
    if args.state is not None:
        torch.save(
            {"policy": policy.state_dict(), "optimizer": optimizer.state_dict(), "steps": done},
            args.state,
        )
    return {
        "losses": losses,
        "trained_on": trained_on,
        "normalized": measured,
        "samples_per_s": len(losses) * args.batch / max(seconds, 1e-9),
        "data_wait": waited / max(seconds, 1e-9),
    }


if __name__ == "__main__":
    main()
