"""What a camera is, in a TED: one answer for the export, the viewer and the standardized stage.

A decoder may declare its cameras (the TED record's ``images``: TED key -> ``CHW``, ``GRAY`` or
``DEPTH``); then only a declared leaf is a camera, so a small uint8 grid (a Minari MiniGrid
observation) stays a state. A TED whose decoder declares none (OpenX's WebDataset repack) has
its cameras told by their shape: ``(N, C, H, W)`` uint8, or a bare ``(N, H, W)`` uint8
observation (Atari's grey frames).
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from episode_warehouse.decoded.format import CHW, DEPTH, GRAY
from episode_warehouse.ted.record import TedRecord

Path_ = tuple[str, ...]


def observation_leaves(td: TensorDictBase) -> list[tuple[Path_, torch.Tensor]]:
    """Each observation leaf (key path under ``observation``, tensor), current frames only."""
    obs = td["observation"]
    if isinstance(obs, torch.Tensor):
        return [((), obs)]
    return [((k,) if isinstance(k, str) else k, obs[k]) for k in obs.keys(True, True)]


def declared_images(meta: TedRecord) -> dict[str, str] | None:
    """The cameras the source's decoder declared (TED record ``images``: key -> ``CHW``,
    ``GRAY`` or ``DEPTH``), or None for a TED whose decoder declares none."""
    images = meta.extra.get("images")
    return images if isinstance(images, dict) else None


def image_layout(
    path: Path_, value: torch.Tensor, declared: dict[str, str] | None = None
) -> str | None:
    """``CHW`` or ``GRAY`` where the leaf under ``observation`` at ``path`` holds 8-bit camera
    frames, ``DEPTH`` where the decoder declared a depth camera ((N, 1, H, W) uint16 or float32:
    drawn as depth by the viewer, exported as float32 values rather than squeezed into 8 bits),
    else ``None`` (a state). ``declared``: :func:`declared_images`."""
    if declared is not None and declared.get("/".join(("observation", *path))) == DEPTH:
        return DEPTH if value.ndim == 4 and value.shape[1] == 1 else None
    if value.dtype != torch.uint8:
        return None
    if declared is not None:
        layout = declared.get("/".join(("observation", *path)))
        expected = {CHW: 4, GRAY: 3}.get(layout or "")
        return layout if expected == value.ndim else None
    if value.ndim == 4:
        return CHW
    if value.ndim == 3 and path == ():
        return GRAY
    return None


def camera_leaves(
    rows: TensorDictBase, declared: dict | None = None
) -> dict[str, tuple[tuple[str, ...], str]]:
    """Each camera's name (its TED key, ``/``-joined) -> (key path, image layout)."""
    out = {}
    for path, value in observation_leaves(rows):
        layout = image_layout(path, value, declared)
        if layout is not None:
            out["/".join(("observation", *path))] = (("observation", *path), layout)
    return out
