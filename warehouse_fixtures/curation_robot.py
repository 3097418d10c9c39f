"""A reaching robot for the curation measurements (#60): many distinct episodes of one task in
one scene, and planted duplicates of some of them, written as WebDataset shards of the OXE
repack (``openx_writer``'s format).

Every episode reaches from a start near the origin to a goal drawn anew: the state is the
hand's (x, y, z) and a gripper, the action a 7-d velocity command with noise, the camera a 32x32
JPEG of one shared scene with the hand drawn where it is. Distinct episodes therefore look
alike (the same background, the same kind of motion), as a real dataset's do.

Planted duplicates of an episode, each a kind users meet:

- ``republished``: the same episode again, its bytes unchanged (a shard published twice);
- ``reencoded``: the same steps, every frame re-encoded as JPEG at another quality;
- ``shifted``: the same episode without its first :data:`SHIFT` steps (a recording that started
  late), frames re-encoded.

Planted look-alikes, distinct episodes a duplicate rule must keep (:data:`LOOKALIKES`):

- ``other_scene``: the same trajectory (states, actions) replayed in another scene: every frame
  differs;
- ``other_instruction``: the same recording (every byte of its steps) with another instruction.

Planted chains (:data:`CHAIN_LINKS` episodes cut from one long recording, each starting a
quarter of a link later than the one before: neighbours share 60% of their steps, the ends
none): a link resembles its neighbours only.
"""

from __future__ import annotations

import io
import pickle
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from warehouse_fixtures.openx_writer import add_member

SIZE = 32
SHIFT = 3
KINDS = ("republished", "reencoded", "shifted")
LOOKALIKES = ("other_scene", "other_instruction")
CHAIN_LINKS = 5
LINK = 40  # steps of a chain's link


@dataclass(frozen=True)
class Trajectory:
    states: np.ndarray  # (n, 4)
    actions: np.ndarray  # (n, 7)
    pixels: list[np.ndarray]  # (SIZE, SIZE, 3) uint8 per step
    instruction: str


def _scene(rng: np.random.Generator) -> np.ndarray:
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    base = np.stack([60 + 2 * ys, 80 + xs, 120 - ys], -1).astype(np.uint8)
    base[20:24, 4:28] = (90, 60, 40)  # a table edge
    return base


def _other_scene() -> np.ndarray:
    """Another room: a dark floor, a light wall, the table elsewhere."""
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    base = np.stack([200 - 3 * ys, 190 - xs, 60 + 4 * xs], -1).clip(0, 255).astype(np.uint8)
    base[6:10, 2:30] = (30, 120, 200)
    return base


def render(xyz: np.ndarray, scene: np.ndarray) -> list[np.ndarray]:
    """The camera's frames of a hand at ``xyz`` in ``scene``."""
    pixels = []
    for x, y, _ in xyz:
        img = scene.copy()
        cx, cy = int((x + 1) / 2 * (SIZE - 6)), int((y + 1) / 2 * (SIZE - 6))
        img[cy : cy + 6, cx : cx + 6] = (230, 40, 30)
        pixels.append(img)
    return pixels


def reach(rng: np.random.Generator, length: int, scene: np.ndarray) -> Trajectory:
    """One distinct reaching episode."""
    start = rng.normal(0, 0.05, 3)
    goal = rng.uniform(-1, 1, 3)
    t = np.linspace(0, 1, length)[:, None]
    smooth = 3 * t**2 - 2 * t**3
    wobble = rng.normal(0, 0.01, (length, 3)).cumsum(0)
    xyz = start + (goal - start) * smooth + wobble
    grip = (t[:, 0] > rng.uniform(0.4, 0.9)).astype(np.float64)
    states = np.concatenate([xyz, grip[:, None]], 1)
    velocity = np.diff(xyz, axis=0, append=xyz[-1:])
    actions = np.concatenate(
        [velocity, rng.normal(0, 0.01, (length, 3)), grip[:, None]], 1
    ) + rng.normal(0, 0.002, (length, 7))
    return Trajectory(states, actions, render(xyz, scene), "reach the red target")


def _cut(traj: Trajectory, start: int, stop: int) -> Trajectory:
    return Trajectory(traj.states[start:stop], traj.actions[start:stop], traj.pixels[start:stop],
                      traj.instruction)  # fmt: skip


def _jpeg(pixels: np.ndarray, quality: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=quality)
    return out.getvalue()


def episode_dict(traj: Trajectory, quality: int = 90, skip: int = 0) -> dict:
    """The pickled episode of the OXE repack (steps from ``skip`` on)."""
    n = len(traj.states)
    steps = []
    for i in range(skip, n):
        steps.append(
            {
                "observation": {
                    "image": {"bytes": _jpeg(traj.pixels[i], quality), "path": None},
                    "state": traj.states[i].astype(np.float32),
                },
                "action": traj.actions[i].astype(np.float32),
                "reward": np.float32(1.0 if i == n - 1 else 0.0),
                "discount": np.float32(1.0),
                "is_first": np.bool_(i == skip),
                "is_last": np.bool_(i == n - 1),
                "is_terminal": np.bool_(i == n - 1),
                "language_instruction": traj.instruction,
            }
        )
    return {"steps": steps, "episode_metadata": {"file_path": f"reach/{id(traj)}"}}


def write_reaching(
    root: Path, name: str, episodes: int, *, seed: int = 0, per_shard: int = 500,
    planted: int = 0, lengths: tuple[int, int] = (30, 60), lookalikes: int = 0, chains: int = 0,
) -> dict[str, list[tuple[int, ...]]]:  # fmt: skip
    """Write ``episodes`` distinct episodes, then ``planted`` duplicates (kinds in turn, of the
    first ``planted`` episodes), ``lookalikes`` look-alikes (kinds in turn, of the episodes
    after those), and ``chains`` chains, as ``<root>/<name>/<name>_NNNNN.tar``. Returns, per
    kind, the (original, planted) episode indices in write order (the catalog's episode ids),
    and under ``chain`` each chain's links in order."""
    rng = np.random.default_rng(seed)
    scene = _scene(rng)
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    trajectories = [reach(rng, int(rng.integers(*lengths)), scene) for _ in range(episodes)]
    payloads = [episode_dict(t) for t in trajectories]
    pairs: dict[str, list[tuple[int, ...]]] = {k: [] for k in (*KINDS, *LOOKALIKES, "chain")}
    for i in range(planted):
        kind = KINDS[i % len(KINDS)]
        original = trajectories[i]
        if kind == "republished":
            payloads.append(payloads[i])
        elif kind == "reencoded":
            payloads.append(episode_dict(original, quality=70))
        else:
            payloads.append(episode_dict(original, quality=85, skip=SHIFT))
        pairs[kind].append((i, len(payloads) - 1))
    other = _other_scene()
    for n in range(lookalikes):
        i = planted + n
        kind, original = LOOKALIKES[n % len(LOOKALIKES)], trajectories[i]
        if kind == "other_scene":
            xyz = original.states[:, :3]
            twin = Trajectory(original.states, original.actions, render(xyz, other),
                              original.instruction)  # fmt: skip
        else:
            twin = Trajectory(original.states, original.actions, original.pixels,
                              "push the red target away")  # fmt: skip
        payloads.append(episode_dict(twin))
        pairs[kind].append((i, len(payloads) - 1))
    step = LINK // 4
    for _ in range(chains):
        long = reach(rng, LINK + step * (CHAIN_LINKS - 1), scene)
        links = []
        for k in range(CHAIN_LINKS):
            payloads.append(episode_dict(_cut(long, k * step, k * step + LINK)))
            links.append(len(payloads) - 1)
        pairs["chain"].append(tuple(links))
    for shard, first in enumerate(range(0, len(payloads), per_shard)):
        with tarfile.open(folder / f"{name}_{shard:05d}.tar", "w",
                          format=tarfile.USTAR_FORMAT) as tar:  # fmt: skip
            for i in range(first, min(first + per_shard, len(payloads))):
                add_member(tar, f"{name}_{i:06d}.data.pickle", pickle.dumps(payloads[i], 4))
    return pairs


def write_reaching_with_copy(
    root: Path, episodes: int, planted: int, *, seed: int = 0, per_shard: int = 100,
    lookalikes: int = 0, chains: int = 0,
) -> dict[str, list[tuple[int, ...]]]:  # fmt: skip
    """``reach`` (:func:`write_reaching`) and ``reach_copy``: its first shard published again
    as a dataset of its own (every episode of it an exact duplicate across datasets)."""
    pairs = write_reaching(root, "reach", episodes, seed=seed, per_shard=per_shard,
                           planted=planted, lookalikes=lookalikes, chains=chains)  # fmt: skip
    copy = Path(root) / "reach_copy"
    copy.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(root) / "reach" / "reach_00000.tar", copy / "reach_copy_00000.tar")
    return pairs
