"""A Minari dataset's ``data/metadata.json``: its backend, spaces, counts and provenance.

Minari (``minari/dataset/minari_storage.py``) writes ``total_episodes``, ``total_steps``,
``data_format`` (``hdf5``, ``arrow`` or ``parquet``), ``jpeg_encoding`` (Minari reads a missing
one as true), ``observation_space`` and ``action_space`` (serialized, see :mod:`.spaces`),
``env_spec`` (Gymnasium's ``EnvSpec.to_json()``, itself a JSON string), and
``create_dataset``'s ``dataset_id``, ``algorithm_name``, ``author``, ``code_permalink``,
``minari_version`` ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import CorruptInputError, FormatVersionError
from episode_warehouse.guards.json_input import read_json_file
from episode_warehouse.sources.minari.spaces import Leaf, parse_space

METADATA = "metadata.json"
FORMATS = ("hdf5", "arrow", "parquet")
MAX_EPISODES = 10_000_000
_FIX = "download the dataset again (data/metadata.json is not what Minari writes)"


@dataclass(frozen=True)
class DatasetInfo:
    """What the decoder needs of ``metadata.json``, checked."""

    data_dir: Path
    data_format: str
    jpeg_encoding: bool
    observation: list[Leaf]
    action: list[Leaf]
    observation_nested: bool  # a Dict or Tuple observation space (keys under "observation/")
    action_nested: bool
    total_episodes: int
    total_steps: int
    provenance: dict  # dataset_id, algorithm_name, env_id, minari_version (those present)


def _nested(space: object) -> bool:
    if isinstance(space, str):
        space = json.loads(space)
    return isinstance(space, dict) and space.get("type") in ("Dict", "Tuple")


def _count(meta: dict, name: str, subject: str) -> int:
    value = meta.get(name)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= MAX_EPISODES * 10_000
    ):
        raise CorruptInputError(f"{name} is {value!r}, not a count", subject=subject, fix=_FIX)
    return value


def read_info(data_dir: Path) -> DatasetInfo:
    """The checked metadata of the dataset whose ``data/`` folder is ``data_dir``.

    Raises:
        CorruptInputError: a field missing or of the wrong kind, a space Minari does not write.
        FormatVersionError: a backend this warehouse does not read.
    """
    path = Path(data_dir) / METADATA
    meta = read_json_file(path, fix=_FIX)
    subject = str(path)
    if not isinstance(meta, dict):
        raise CorruptInputError("not a JSON object", subject=subject, fix=_FIX)
    data_format = meta.get("data_format", "hdf5")
    if data_format not in FORMATS:
        raise FormatVersionError(
            f"a Minari dataset stored as {data_format!r}",
            subject=subject,
            fix=f"this warehouse reads the backends Minari writes: {', '.join(FORMATS)}",
        )
    for space in ("observation_space", "action_space"):
        if space not in meta:
            raise CorruptInputError(f"no {space}", subject=subject, fix=_FIX)
    episodes = _count(meta, "total_episodes", subject)
    if episodes > MAX_EPISODES:
        raise CorruptInputError(f"{episodes:,} episodes", subject=subject, fix=_FIX)
    provenance = {
        k: meta[k]
        for k in ("dataset_id", "algorithm_name", "minari_version")
        if isinstance(meta.get(k), str)
    }
    env_id = _env_id(meta.get("env_spec"))
    if env_id:
        provenance["env_id"] = env_id
    return DatasetInfo(
        data_dir=Path(data_dir),
        data_format=data_format,
        jpeg_encoding=bool(meta.get("jpeg_encoding", True)),
        observation=parse_space(meta["observation_space"], subject=f"{subject} observation"),
        action=parse_space(meta["action_space"], subject=f"{subject} action"),
        observation_nested=_nested(meta["observation_space"]),
        action_nested=_nested(meta["action_space"]),
        total_episodes=episodes,
        total_steps=_count(meta, "total_steps", subject),
        provenance=provenance,
    )


def _env_id(env_spec: object) -> str | None:
    """The Gymnasium id in ``env_spec`` (a JSON string of ``EnvSpec.to_json()``), if any."""
    if isinstance(env_spec, str):
        try:
            env_spec = json.loads(env_spec)
        except ValueError:
            return None
    value = env_spec.get("id") if isinstance(env_spec, dict) else None
    return value if isinstance(value, str) and len(value) <= 200 else None
