"""Turn one unpickled OpenX episode into per-key step arrays.

Leaves keep the dtypes ``torch.as_tensor`` gives them (as TorchRL's ``make_tensordict`` does);
camera images (``{"bytes": ..., "path": ...}``) are decoded to uint8 CHW with torchvision.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import CorruptInputError

FLAG_KEYS = ("is_first", "is_last", "is_terminal")
INSTRUCTION_KEY = "language_instruction"


@dataclass
class DecodedEpisode:
    """Step arrays by key (``observation/image`` ...), the instruction, and the length."""

    arrays: dict[str, np.ndarray]
    instruction: str | None
    length: int


def _flatten(obj: dict, prefix: str, out: dict) -> None:
    for key, value in obj.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and not ("bytes" in value and "path" in value):
            _flatten(value, f"{path}/", out)
        else:
            out[path] = value


def _decode_image(value: dict, subject: str) -> np.ndarray:
    import torch
    from torchvision.io import ImageReadMode, decode_image

    data = value.get("bytes")
    if not isinstance(data, bytes | bytearray) or not data:
        raise CorruptInputError("image has no bytes", subject=subject)
    try:
        tensor = decode_image(
            torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.UNCHANGED
        )
    except RuntimeError as exc:
        raise CorruptInputError(
            f"the image does not decode ({exc})",
            subject=subject,
            fix="re-download the shard; the image bytes are corrupt",
        ) from exc
    return tensor.numpy()


# Python scalars get the dtypes torch.as_tensor gives them (as TorchRL's make_tensordict does).
_PY_DTYPES = {bool: np.bool_, int: np.int64, float: np.float32}


def _leaf(value, subject: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value) in _PY_DTYPES:
        return np.asarray(value, dtype=_PY_DTYPES[type(value)])
    import torch

    try:
        return torch.as_tensor(value).numpy()
    except (TypeError, ValueError, RuntimeError) as exc:
        raise CorruptInputError(
            f"unsupported value of type {type(value).__name__}", subject=subject
        ) from exc


def decode_episode(obj: object, subject: str) -> DecodedEpisode:
    """Decode ``{"steps": [...]}`` into stacked arrays, checking shapes step by step.

    Raises:
        CorruptInputError: not an episode dict, no steps, keys or shapes that change between
            steps, or an image that does not decode.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        raise CorruptInputError(
            "not an episode (expected a dict with a 'steps' list)", subject=subject
        )
    steps = obj["steps"]
    if not steps:
        raise CorruptInputError("the episode has no steps", subject=subject)
    columns: dict[str, list] = {}  # image slots stay None until decoded
    images: list[tuple[str, int, dict, str]] = []
    instruction = None
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
                text = value.decode() if isinstance(value, bytes) else str(value)
                instruction = instruction if instruction is not None else text
                continue
            if isinstance(value, dict) and "bytes" in value:
                images.append(
                    (key, len(columns.setdefault(key, [])), value, f"{subject} step {t} {key}")
                )
                columns[key].append(None)
                continue
            arr = _leaf(value, f"{subject} step {t} {key}")
            col = columns.setdefault(key, [])
            if col and (arr.shape != col[0].shape or arr.dtype != col[0].dtype):
                raise CorruptInputError(
                    f"step {t}: {key} has shape {arr.shape} {arr.dtype}, step 0 had "
                    f"{col[0].shape} {col[0].dtype}",
                    subject=subject,
                    fix="the episode is malformed; remove it from the shard",
                )
            col.append(arr)
    decoded = _image_pool().map(lambda job: _decode_image(job[2], job[3]), images)
    for (key, t, _, subject_t), arr in zip(images, decoded, strict=True):
        first = columns[key][0]
        if first is not None and (arr.shape != first.shape or arr.dtype != first.dtype):
            raise CorruptInputError(
                f"{subject_t}: image of shape {arr.shape}, step 0 had {first.shape}",
                subject=subject,
                fix="the episode is malformed; remove it from the shard",
            )
        columns[key][t] = arr
    arrays = {key: np.stack(col) for key, col in columns.items()}
    return DecodedEpisode(arrays, instruction, len(steps))


_POOL = None


def _image_pool():
    """Threads for image decoding (the decoders release the GIL): both cores on one stream."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(
            max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="image-decode"
        )
    return _POOL
