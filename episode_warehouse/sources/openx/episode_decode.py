"""Turn one unpickled OpenX episode into per-key step arrays, checking every value on the way.

Leaves keep the dtypes ``torch.as_tensor`` gives them (as TorchRL's ``make_tensordict`` does);
camera images (``{"bytes": ..., "path": ...}``) are decoded to uint8 CHW with torchvision.

What is refused, naming the member, the step and the key (nothing in a shard is trusted):
values that are not numbers or booleans (object, unicode, bytes, void and complex arrays);
``is_first``/``is_last``/``is_terminal`` that are not booleans; NaN or infinite rewards; a
language instruction that is not text or changes between steps; keys, shapes or dtypes that
change between steps; images over the pixel limit (read from their header, before decoding);
more steps, or more decoded bytes, than the limits allow (checked before the arrays are
stacked, so a pickle that repeats one large step by reference cannot expand unchecked).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.limits import LIMITS_FIX as _LIMITS_FIX
from episode_warehouse.limits import InputLimits
from episode_warehouse.sources.openx.images import checked_image_size, decode_image_bytes

FLAG_KEYS = ("is_first", "is_last", "is_terminal")
INSTRUCTION_KEY = "language_instruction"
_NUMERIC = "biuf"  # bool, signed and unsigned integers, floats
_KIND_NAMES = {"O": "object", "U": "unicode", "S": "bytes", "V": "void", "c": "complex"}


@dataclass
class DecodedEpisode:
    """Step arrays by key (``observation/image`` ...), the instruction, and the length."""

    arrays: dict[str, np.ndarray | CameraRows]  # cameras: their frames' bytes too
    instruction: str | None
    length: int


def _flatten(obj: dict, prefix: str, out: dict) -> None:
    for key, value in obj.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and not ("bytes" in value and "path" in value):
            _flatten(value, f"{path}/", out)
        else:
            out[path] = value


# Python scalars get the dtypes torch.as_tensor gives them (as TorchRL's make_tensordict does).
_PY_DTYPES = {bool: np.bool_, int: np.int64, float: np.float32}


def _leaf(value, where: str, subject: str) -> np.ndarray:
    """A step value as a numeric array; anything else is refused."""
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
    elif type(value) in _PY_DTYPES:
        arr = np.asarray(value, dtype=_PY_DTYPES[type(value)])
    elif isinstance(value, list | tuple):
        import torch

        try:
            arr = torch.as_tensor(value).numpy()  # the dtypes TorchRL's make_tensordict gives
        except (TypeError, ValueError, RuntimeError) as exc:
            raise CorruptInputError(
                f"{where} is a list that is not a numeric array ({exc})", subject=subject
            ) from exc
    else:
        raise CorruptInputError(
            f"{where} is a {type(value).__name__}: only numbers, booleans and arrays of them "
            "are read",
            subject=subject,
            fix="the episode is malformed; remove it from the shard",
        )
    if arr.dtype.kind not in _NUMERIC:
        kind = _KIND_NAMES.get(arr.dtype.kind, arr.dtype.kind)
        raise CorruptInputError(
            f"{where} has dtype {arr.dtype.str} ({kind}): only numbers and booleans are read",
            subject=subject,
            fix="the episode is malformed; remove it from the shard",
        )
    return arr


def _instruction(value, t: int, subject: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "SU":
        return _instruction(value.item(), t, subject)
    raise CorruptInputError(
        f"step {t} {INSTRUCTION_KEY} is a {type(value).__name__}, not text",
        subject=subject,
        fix="the episode is malformed; remove it from the shard",
    )


def _check_flags_and_rewards(columns: dict[str, list], subject: str) -> None:
    for key in FLAG_KEYS:
        for t, arr in enumerate(columns.get(key, [])):
            if arr.dtype != np.bool_:
                raise CorruptInputError(
                    f"step {t} {key} is {arr.dtype}, must be a boolean",
                    subject=subject,
                    fix="the episode is malformed; remove it from the shard",
                )
    for t, arr in enumerate(columns.get("reward", [])):
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            what = "NaN" if np.isnan(arr).any() else "infinite"
            raise CorruptInputError(
                f"step {t} reward is {what}",
                subject=subject,
                fix="the episode is malformed; remove it from the shard",
            )


def decode_episode(
    obj: object,
    subject: str,
    *,
    member_bytes: int = 0,
    limits: InputLimits | None = None,
    pool: Executor | None = None,
) -> DecodedEpisode:
    """Decode ``{"steps": [...]}`` into stacked arrays, checking every step.

    Args:
        obj: the unpickled episode.
        subject: ``shard.tar:member`` for errors.
        member_bytes: the size of the pickled member (the expansion limit is relative to it).
        limits: the input limits (defaults: :class:`InputLimits`).
        pool: threads to decode the images on (the decoders release the GIL); else in turn.

    Raises:
        CorruptInputError: not an episode dict, no steps, a refused value (module docstring),
            keys, shapes or dtypes that change between steps, or an image that does not decode.
        LimitExceededError: more steps, pixels or decoded bytes than the limits allow.
    """
    limits = limits or InputLimits()
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        raise CorruptInputError(
            "not an episode (expected a dict with a 'steps' list)", subject=subject
        )
    steps = obj["steps"]
    if not steps:
        raise CorruptInputError("the episode has no steps", subject=subject)
    if len(steps) > limits.max_steps:
        raise LimitExceededError(
            f"the episode has {len(steps)} steps, over the limit of {limits.max_steps}",
            subject=subject,
            fix=_LIMITS_FIX,
        )
    budget = limits.decoded_budget(member_bytes)
    used = 0
    columns: dict[str, list] = {}  # image slots stay None until decoded
    images: list[tuple[str, int, bytes, str]] = []
    instruction: str | None = None
    first_keys: list[str] | None = None
    for t, step in enumerate(steps):
        if not isinstance(step, dict):
            raise CorruptInputError(f"step {t} is not a dict", subject=subject)
        flat: dict = {}
        _flatten(step, "", flat)
        keys = sorted(flat)
        if first_keys is None:
            first_keys = keys
        elif keys != first_keys:
            raise CorruptInputError(
                f"step {t} has keys {sorted(set(keys) ^ set(first_keys))} that step 0 "
                "does not share",
                subject=subject,
            )
        for key, value in flat.items():
            if key == INSTRUCTION_KEY:
                text = _instruction(value, t, subject)
                if instruction is not None and text != instruction:
                    raise CorruptInputError(
                        f"step {t} {INSTRUCTION_KEY} {text!r} differs from step 0's "
                        f"{instruction!r}: one instruction per episode is read",
                        subject=subject,
                        fix="split the episode, or give all its steps one instruction",
                    )
                instruction = text
                continue
            if isinstance(value, dict) and "bytes" in value:
                data = value.get("bytes")
                where = f"{subject} step {t} {key}"
                if not isinstance(data, bytes | bytearray) or not data:
                    raise CorruptInputError("image has no bytes", subject=where)
                c, h, w = checked_image_size(bytes(data), where, limits)
                used += c * h * w
                images.append((key, len(columns.setdefault(key, [])), bytes(data), where))
                columns[key].append(None)
            else:
                arr = _leaf(value, f"step {t} {key}", subject)
                col = columns.setdefault(key, [])
                if col and (arr.shape != col[0].shape or arr.dtype != col[0].dtype):
                    raise CorruptInputError(
                        f"step {t}: {key} has shape {arr.shape} {arr.dtype}, step 0 had "
                        f"{col[0].shape} {col[0].dtype}",
                        subject=subject,
                        fix="the episode is malformed; remove it from the shard",
                    )
                used += arr.nbytes
                col.append(arr)
            if used > budget:
                raise LimitExceededError(
                    f"the episode decodes to more than {budget} bytes at step {t} ({used} "
                    f"bytes from a {member_bytes}-byte member)",
                    subject=subject,
                    fix=_LIMITS_FIX,
                )
    _check_flags_and_rewards(columns, subject)
    run = pool.map if pool is not None else map
    decoded = run(lambda job: decode_image_bytes(job[2], job[3], limits), images)
    for (key, t, _, where), arr in zip(images, decoded, strict=True):
        first = columns[key][0]
        if first is not None and (arr.shape != first.shape or arr.dtype != first.dtype):
            raise CorruptInputError(
                f"{where}: image of shape {arr.shape}, step 0 had {first.shape}",
                subject=subject,
                fix="the episode is malformed; remove it from the shard",
            )
        columns[key][t] = arr
    blobs: dict[str, list[bytes | None]] = {}
    for key, t, data, _ in images:  # what each camera's frames were published as
        blobs.setdefault(key, [None] * len(columns[key]))[t] = data
    try:
        arrays = {
            key: CameraRows(np.stack(col), blobs[key]) if key in blobs else np.stack(col)
            for key, col in columns.items()
        }
    except MemoryError:
        raise LimitExceededError(
            "the episode does not fit in memory", subject=subject, fix=_LIMITS_FIX
        ) from None
    return DecodedEpisode(arrays, instruction, len(steps))
