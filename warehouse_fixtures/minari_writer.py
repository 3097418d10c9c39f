"""Minari datasets written by Minari itself: its ``DataCollector`` around Gymnasium environments,
then ``create_dataset``, in any of Minari's backends (hdf5, arrow, parquet).

Nothing here writes Minari's files by hand: the files are what Minari writes for these
environments, so a reader tested on them reads what users download. ``minari`` (with its
``create``, ``hdf5`` and ``arrow`` extras) is a test dependency, imported when a dataset is
written.

Environments: Gymnasium's ``CartPole-v1`` (Box observation, Discrete action, terminations) and
``Pendulum-v1`` (bounded Box action, time-limit truncations), and
:class:`~warehouse_fixtures.minari_env.ArmCameraEnv` (Dict observation with a camera) and
:class:`~warehouse_fixtures.minari_env.MixedSpacesEnv` (Tuple of Box, MultiDiscrete, MultiBinary
and Text; a MultiDiscrete action) and :class:`~warehouse_fixtures.minari_env.CountdownEnv`
(an episode that terminates on the step its time limit truncates).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from warehouse_fixtures.environment import variable_set

ARM_ID = "WarehouseArmCamera-v0"
MIXED_ID = "WarehouseMixedSpaces-v0"
COUNTDOWN_ID = "WarehouseCountdown-v0"
_ENTRY_POINTS = {
    ARM_ID: "warehouse_fixtures.minari_env:ArmCameraEnv",
    MIXED_ID: "warehouse_fixtures.minari_env:MixedSpacesEnv",
    COUNTDOWN_ID: "warehouse_fixtures.minari_env:CountdownEnv",
}


@dataclass(frozen=True)
class MinariSpec:
    """One dataset: ``env`` (a Gymnasium id or :data:`ARM_ID`), episodes, backend, seed."""

    dataset_id: str
    env: str = "CartPole-v1"
    episodes: int = 4
    data_format: str = "hdf5"
    max_steps: int = 40
    seed: int = 0
    record_infos: bool = True
    jpeg_encoding: bool = True


def _make_env(spec: MinariSpec):
    import gymnasium as gym

    if spec.env in _ENTRY_POINTS and spec.env not in gym.registry:
        gym.register(spec.env, entry_point=_ENTRY_POINTS[spec.env])
    return gym.make(spec.env, max_episode_steps=spec.max_steps)


def write_minari_dataset(spec: MinariSpec, datasets: Path) -> Path:
    """Write ``spec`` with Minari into ``datasets`` (``MINARI_DATASETS_PATH`` layout); returns
    the dataset's folder (``datasets/<dataset_id>``). A random policy, seeded: the same spec
    writes the same episodes."""
    from minari import DataCollector

    datasets = Path(datasets)
    datasets.mkdir(parents=True, exist_ok=True)
    with variable_set("MINARI_DATASETS_PATH", str(datasets)):
        env = DataCollector(
            _make_env(spec),
            record_infos=spec.record_infos,
            data_format=spec.data_format,
            jpeg_encoding=spec.jpeg_encoding,
        )
        env.action_space.seed(spec.seed)
        for episode in range(spec.episodes):
            env.reset(seed=spec.seed * 1000 + episode)
            while True:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    break
        env.create_dataset(
            dataset_id=spec.dataset_id,
            algorithm_name="random",
            author="episode-warehouse fixtures",
            author_email="fixtures@example.org",
            code_permalink="https://example.org/episode-warehouse",
            description=f"{spec.env}, a seeded random policy (episode-warehouse fixtures)",
            eval_env=spec.env,
        )
        env.close()
    return datasets / spec.dataset_id
