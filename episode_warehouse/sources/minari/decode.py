"""A mirrored Minari dataset (``<dataset>/data/``) -> decoded episodes, one episode at a time.

Keys, as TorchRL's ``MinariExperienceReplay`` names them: ``observation`` (``observation/<key>``
for a Dict space, ``observation/<i>`` for a Tuple, nested), ``action`` (likewise), the reward
(Minari's float64 kept), the termination as the terminal flag, and ``info/<path>`` for the
numeric infos whose structure is the same in every episode. Of an episode's N+1 observations
the first N are its steps' and the last is its final observation (TED: ``("next", key)`` on
the last step). Images are stored channels-first (``(C, H, W)``, as every camera here), text
leaves as indices into the record's ``texts``.

Terminations and truncations are kept per step as recorded (TED: ``("next", "terminated")``
and ``("next", "truncated")``): gymnasium's TimeLimit sets both on a step that terminates at
the time limit, and Minari records both.

Per episode: ``return`` (the sum of its rewards), ``terminated`` and ``truncated`` (its last
step's flags as recorded; at least one is set: Minari ends an episode only there),
``source_files``, and ``episode_metadata`` JSON: the Minari episode id, its ``seed`` and
``options``, and the dataset's ``dataset_id``, ``algorithm_name``, ``env_id`` and
``minari_version``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from episode_warehouse.decoded.format import CHW, FINAL, ArraySpec, episode_table
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.decoded.writer import DecodedWriter
from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.limits import LIMITS_FIX, InputLimits, check_text
from episode_warehouse.progress import progress
from episode_warehouse.sources.minari.arrow_reader import arrow_episodes
from episode_warehouse.sources.minari.episode import RawEpisode, check_episode
from episode_warehouse.sources.minari.hdf5_reader import hdf5_episodes
from episode_warehouse.sources.minari.metadata import DatasetInfo, read_info
from episode_warehouse.sources.minari.spaces import Leaf

log = logging.getLogger(__name__)


def _key(root: str, leaf: Leaf, nested: bool) -> str:
    return "/".join((root, *leaf.path)) if nested or leaf.path else root


def _frames(values: np.ndarray) -> np.ndarray:
    """Images (N, H, W[, C]) as the warehouse's cameras hold them: (N, C, H, W)."""
    return values[:, None] if values.ndim == 3 else values.transpose(0, 3, 1, 2)


class _Texts:
    """Per-key tables of the distinct texts, for text leaves stored as indices; each text and
    each table bounded by the input limits (the tables are in the record every reader opens)."""

    def __init__(self, limits: InputLimits, subject: str) -> None:
        self.tables: dict[str, dict[str, int]] = {}
        self.limits, self.subject = limits, subject

    def index(self, key: str, texts: list[str]) -> np.ndarray:
        table = self.tables.setdefault(key, {})
        out = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            if text not in table:
                check_text(text, self.limits, what=f"{key} at step {i}", subject=self.subject)
                if len(table) >= self.limits.max_texts:
                    raise LimitExceededError(
                        f"{key} holds more than {self.limits.max_texts:,} distinct texts",
                        subject=self.subject,
                        fix=LIMITS_FIX,
                    )
                table[text] = len(table)
            out[i] = table[text]
        return out

    def to_json(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.tables.items()}


def _info_keys(first: RawEpisode) -> dict[tuple[str, ...], tuple[str, tuple[int, ...]]]:
    """The infos of the first episode with a row per observation (N+1), by path."""
    return {
        path: (values.dtype.str, values.shape[1:])
        for path, values in first.infos.items()
        if len(values) == first.steps + 1
    }


def _episodes(info: DatasetInfo, limits: InputLimits):
    if info.data_format == "hdf5":
        return hdf5_episodes(info, limits)
    return arrow_episodes(info, limits)


def decode_minari(
    dataset: Path,
    staging: Path,
    *,
    lineage: dict | None = None,
    limits: InputLimits | None = None,
) -> DecodedRecord:
    """Decode the Minari dataset in ``dataset`` (holding ``data/``) into ``staging``.

    Raises:
        CorruptInputError: the metadata, a file or an episode is not what Minari writes (named
            with the episode and key); nothing is published.
        LimitExceededError: an episode over ``limits`` (steps, declared bytes, texts), checked
            from what the files declare before their values are read.
    """
    limits = limits or InputLimits()
    info = read_info(Path(dataset) / "data")
    subject = str(Path(dataset) / "data")
    writer = DecodedWriter(staging)
    texts = _Texts(limits, subject)
    columns: dict[str, list] = {
        k: []
        for k in (
            "episode",
            "start",
            "length",
            "return",
            "terminated",
            "truncated",
            "true_start",
            "complete",
            "source_files",
            "episode_metadata",
        )
    }
    kept_infos: dict[tuple[str, ...], tuple[str, tuple[int, ...]]] | None = None
    rows = 0
    with progress("decoding episodes", info.total_episodes, "episodes") as bar:
        for ep in _episodes(info, limits):
            if ep.steps > limits.max_steps:
                raise LimitExceededError(
                    f"episode {ep.id} has {ep.steps:,} steps, over the limit of "
                    f"{limits.max_steps:,}",
                    subject=subject,
                    fix=LIMITS_FIX,
                )
            check_episode(ep, info.observation, info.action, subject)
            if kept_infos is None:
                kept_infos = _info_keys(ep)
            for path, structure in kept_infos.items():
                _check_info(path, structure, ep, subject)
            _write_leaves(
                writer,
                texts,
                info.observation,
                ep.observations,
                "observation",
                info.observation_nested,
                final=True,
            )
            _write_leaves(
                writer, texts, info.action, ep.actions, "action", info.action_nested, final=False
            )
            for path, (dtype, shape) in kept_infos.items():
                key = "/".join(("info", *path))
                values = ep.infos[path]
                writer.append(ArraySpec(key, shape, dtype, "observation"), values[:-1])
                writer.append(ArraySpec(key, shape, dtype, FINAL), values[-1:])
            writer.append(ArraySpec("reward", (), "<f8", "reward"), ep.rewards.astype(np.float64))
            writer.append(
                ArraySpec("terminated", (), "|b1", "terminal"), ep.terminations.astype(bool)
            )
            writer.append(
                ArraySpec("truncated", (), "|b1", "truncation"), ep.truncations.astype(bool)
            )
            columns["episode"].append(ep.id)
            columns["start"].append(rows)
            columns["length"].append(ep.steps)
            columns["return"].append(float(ep.rewards.astype(np.float64).sum()))
            columns["terminated"].append(bool(ep.terminations[-1]))
            columns["truncated"].append(bool(ep.truncations[-1]))
            columns["true_start"].append(True)
            columns["complete"].append(True)
            columns["source_files"].append([ep.source_file])
            columns["episode_metadata"].append(
                json.dumps(
                    {
                        "minari_episode": ep.id,
                        "seed": ep.seed,
                        "options": ep.options,
                        **info.provenance,
                    },
                    default=str,
                    sort_keys=True,
                    allow_nan=False,
                )
            )
            rows += ep.steps
            bar.update(1)
    return writer.finish(
        episode_table(columns),
        {
            "texts": texts.to_json(),
            # Minari's images (is_image_space), stored channels first; any other uint8 array
            # (a MiniGrid observation) is a state
            "images": {
                _key("observation", leaf, info.observation_nested): CHW
                for leaf in info.observation
                if leaf.image
            },
            "minari": {
                **info.provenance,
                "data_format": info.data_format,
                "jpeg_encoding": info.jpeg_encoding,
            },
            **(lineage or {}),
        },
    )


def _check_info(
    path: tuple[str, ...], structure: tuple[str, tuple[int, ...]], ep: RawEpisode, subject: str
) -> None:
    """Refuse an episode whose info at ``path`` has another structure than the first's."""
    values = ep.infos.get(path)
    if (
        values is not None
        and (values.dtype.str, values.shape[1:]) == structure
        and len(values) == ep.steps + 1
    ):
        return
    raise CorruptInputError(
        f"infos/{'/'.join(path)} changes structure at episode {ep.id} (the first episode's "
        "is kept for every episode)",
        subject=subject,
        fix="write the dataset with infos of one structure, or without them (record_infos=False)",
    )


def _write_leaves(
    writer: DecodedWriter,
    texts: _Texts,
    leaves: list[Leaf],
    arrays: dict,
    root: str,
    nested: bool,
    *,
    final: bool,
) -> None:
    """Append one episode's ``leaves``: for observations the first N rows as the steps' and
    the last as the final observation; actions as they are."""
    for leaf in leaves:
        key = _key(root, leaf, nested)
        values = arrays[leaf.path]
        if leaf.kind == "text":
            values = texts.index(key, values)
        elif leaf.image:
            values = _frames(np.asarray(values, dtype=np.uint8))
        values = np.asarray(values)
        shape, dtype = values.shape[1:], values.dtype.str
        if final:
            steps = CameraRows(values[:-1]) if leaf.image else values[:-1]  # compressed once
            writer.append(ArraySpec(key, shape, dtype, "observation"), steps)
            writer.append(ArraySpec(key, shape, dtype, FINAL), values[-1:])
        else:
            writer.append(ArraySpec(key, shape, dtype, "step"), values)
