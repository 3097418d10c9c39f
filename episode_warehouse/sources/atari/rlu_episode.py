"""One RL Unplugged Atari record (a ``tf.train.Example`` episode), checked and decoded.

What a row means comes from the code that logged it, Dopamine's DQN agent
(shared/reference/rl-unplugged-atari.md, "Semantics"): ``step`` and ``end_episode`` store
(the observation at which the action was taken, the action, the reward that followed it), so a
record of N rows is **N transitions**; the observation after the last one was never logged.
TFDS's ``atari_example_to_rlds`` reads the last row as an RLDS terminal step with an invalid
action and reward, which drops one real transition per episode: we keep all N.

Both reward fields hold clipped rewards (Dopamine clips before the agent stores them): the
record is refused unless ``clipped_rewards`` lies in [-1, 1] and equals the clip of
``unclipped_rewards``, and unless ``episode_return`` / ``clipped_episode_return`` are the sums of
all N values of their fields. Discounts are 1 on every row but the last, which is 0 when the
episode ended (game over or the time limit) and 1 when the checkpoint file cut it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.numbers import finite_number
from episode_warehouse.image_header import image_size, png_prefix
from episode_warehouse.tfrecord.example import parse_example

FRAME_SHAPE = (84, 84)
_PER_STEP = ("observations", "actions", "unclipped_rewards", "clipped_rewards", "discounts")
_SCALARS = {
    "checkpoint_idx": "int64_list",
    "episode_idx": "int64_list",
    "episode_return": "float_list",
    "clipped_episode_return": "float_list",
}
_FIX = "the file is not an RL Unplugged Atari episode file; re-download it or leave it out"


@dataclass(frozen=True)
class RluRecord:
    """A checked record: per-step values (N each) and the PNG frames, not yet decoded."""

    checkpoint_idx: int
    episode_idx: int
    episode_return: float
    clipped_episode_return: float
    pngs: Sequence[bytes]  # protobuf's repeated field: a frame's bytes are made when read
    actions: np.ndarray  # int64 (N,)
    rewards: np.ndarray  # float32 (N,): ``clipped_rewards`` (equal to the clip of the other)
    discounts: np.ndarray  # float32 (N,)

    @property
    def steps(self) -> int:
        """N, the number of rows: observations, actions and rewards, one transition each."""
        return len(self.pngs)

    @property
    def ended(self) -> bool:
        """Whether the logger marked the last row terminal (game over or the time limit)."""
        return bool(self.discounts[-1] == 0)


def _feature(features, name: str, kind: str, where: str):
    if name not in features:
        raise CorruptInputError(f"{where}: the episode has no {name!r} feature", fix=_FIX)
    feature = features[name]
    if feature.WhichOneof("kind") != kind:
        raise CorruptInputError(
            f"{where}: {name!r} is a {feature.WhichOneof('kind')}, expected {kind}", fix=_FIX
        )
    return getattr(feature, kind).value


def parse_record(data: bytes, where: str) -> RluRecord:
    """Parse and check one record; ``where`` is ``<file> record at byte <offset>``.

    Raises:
        CorruptInputError: not an Example, a missing or mistyped feature, per-step lists of
            different lengths, an empty episode, actions outside 0-17 or non-finite rewards.
    """
    try:
        features = parse_example(data).features.feature
    except DecodeError as exc:
        raise CorruptInputError(f"{where}: not a tf.train.Example ({exc})", fix=_FIX) from None
    scalars = {}
    for name, kind in _SCALARS.items():
        values = _feature(features, name, kind, where)
        if len(values) != 1:
            raise CorruptInputError(
                f"{where}: {name!r} holds {len(values)} values, not 1", fix=_FIX
            )
        scalars[name] = values[0]
        if kind == "float_list":  # a return of inf passes any tolerance that scales with it
            finite_number(values[0], what=name, subject=where, fix=_FIX)
    pngs = _feature(features, "observations", "bytes_list", where)  # read lazily, not copied
    lists: dict[str, np.ndarray] = {
        "actions": np.array(_feature(features, "actions", "int64_list", where), dtype=np.int64),
        "unclipped_rewards": np.array(
            _feature(features, "unclipped_rewards", "float_list", where), dtype=np.float32
        ),
        "clipped_rewards": np.array(
            _feature(features, "clipped_rewards", "float_list", where), dtype=np.float32
        ),
        "discounts": np.array(
            _feature(features, "discounts", "float_list", where), dtype=np.float32
        ),
    }
    lengths = {"observations": len(pngs), **{k: len(v) for k, v in lists.items()}}
    if len(set(lengths.values())) != 1:
        raise CorruptInputError(
            f"{where}: per-step lists of different lengths "
            + ", ".join(f"{k} {lengths[k]}" for k in _PER_STEP),
            fix=_FIX,
        )
    if not pngs:
        raise CorruptInputError(f"{where}: the episode has no step", fix=_FIX)
    actions = lists["actions"]
    if ((actions < 0) | (actions >= 18)).any():
        bad = int(np.argmax((actions < 0) | (actions >= 18)))
        raise CorruptInputError(
            f"{where}: step {bad} action {int(actions[bad])} is not an ALE action (0-17)", fix=_FIX
        )
    for name in ("unclipped_rewards", "clipped_rewards", "discounts"):
        if not np.isfinite(lists[name]).all():
            bad = int(np.argmax(~np.isfinite(lists[name])))
            raise CorruptInputError(f"{where}: step {bad} {name} is not finite", fix=_FIX)
    episode = f"{where} (checkpoint {scalars['checkpoint_idx']}, episode {scalars['episode_idx']})"
    if scalars["episode_idx"] < 0 or scalars["checkpoint_idx"] < 0:
        raise CorruptInputError(f"{episode}: a negative checkpoint_idx or episode_idx", fix=_FIX)
    _check_discounts(lists["discounts"], episode)
    _check_rewards(lists["unclipped_rewards"], lists["clipped_rewards"], scalars, episode)
    return RluRecord(
        checkpoint_idx=int(scalars["checkpoint_idx"]),
        episode_idx=int(scalars["episode_idx"]),
        episode_return=float(scalars["episode_return"]),
        clipped_episode_return=float(scalars["clipped_episode_return"]),
        pngs=pngs,
        actions=actions,
        rewards=lists["clipped_rewards"],
        discounts=lists["discounts"],
    )


def _check_discounts(discounts: np.ndarray, episode: str) -> None:
    """1 on every row but the last, which is 0 or 1; a 0 inside means two episodes merged."""
    outside = np.flatnonzero((discounts != 0) & (discounts != 1))
    if len(outside):
        raise CorruptInputError(
            f"{episode}: step {int(outside[0])} discount {float(discounts[outside[0]])} is not "
            "0 or 1",
            fix=_FIX,
        )
    inside = np.flatnonzero(discounts[:-1] == 0)
    if len(inside):
        raise CorruptInputError(
            f"{episode}: step {int(inside[0])} has discount 0 before the last step (two "
            "episodes merged into one record)",
            fix=_FIX,
        )


def _sums_to(values: np.ndarray, recorded: float) -> bool:
    total = float(values.astype(np.float64).sum())
    return abs(total - recorded) <= 1e-3 + 1e-6 * abs(recorded)


def _check_rewards(unclipped: np.ndarray, clipped: np.ndarray, scalars: dict, episode: str):
    """Clipped rewards in [-1, 1] and equal to the clip of the other field; each recorded
    return the sum of all N rewards of its field (the last row is a real transition)."""
    outside = np.flatnonzero(np.abs(clipped) > 1)
    if len(outside):
        raise CorruptInputError(
            f"{episode}: step {int(outside[0])} clipped_rewards {float(clipped[outside[0]])} "
            "is outside [-1, 1]",
            fix=_FIX,
        )
    differs = np.flatnonzero(np.clip(unclipped, -1, 1) != clipped)
    if len(differs):
        i = int(differs[0])
        raise CorruptInputError(
            f"{episode}: step {i} clipped_rewards {float(clipped[i])} is not the clip of "
            f"unclipped_rewards {float(unclipped[i])}",
            fix=_FIX,
        )
    for name, values, total in (
        ("episode_return", unclipped, scalars["episode_return"]),
        ("clipped_episode_return", clipped, scalars["clipped_episode_return"]),
    ):
        if not _sums_to(values, total):
            raise CorruptInputError(
                f"{episode}: {name} {total} is not the sum of the episode's "
                f"{len(values)} rewards ({float(values.astype(np.float64).sum())})",
                fix=_FIX,
            )


# A gray 84x84 8-bit PNG's first 26 bytes (signature, IHDR length, type, size, depth, colour
# type): one comparison per frame before decoding (the general header parser costs ~5 us). The
# signature counts: OpenCV decodes by the real magic bytes, so a JPEG with an IHDR planted at
# byte 12 would otherwise pass and decode at any size.
_PREFIX = png_prefix(FRAME_SHAPE[1], FRAME_SHAPE[0], 8, 0)


def decode_frames(pngs: Sequence[bytes], out: np.ndarray, where: str, first_step: int = 0) -> None:
    """Decode ``pngs`` into ``out`` (len(pngs), 84, 84) uint8 with OpenCV.

    Each frame's header must declare an 84x84 one-channel 8-bit image before it is decoded.

    Raises:
        CorruptInputError: a frame that is not an 84x84 gray PNG, or does not decode (names
            the step).
    """
    import cv2

    imdecode, unchanged, frombuffer, u8 = (
        cv2.imdecode,
        cv2.IMREAD_UNCHANGED,
        np.frombuffer,
        np.uint8,
    )
    for i, data in enumerate(pngs):
        frame = imdecode(frombuffer(data, u8), unchanged) if data[:26] == _PREFIX else None
        if frame is None or frame.shape != FRAME_SHAPE:
            raise CorruptInputError(
                f"{where}: step {first_step + i} frame declares {image_size(data)} "
                "(channels, height, width), expected an 84x84 gray PNG (1, 84, 84)"
                + (" and does not decode" if image_size(data) == (1, *FRAME_SHAPE) else ""),
                fix=_FIX,
            )
        out[i] = frame
