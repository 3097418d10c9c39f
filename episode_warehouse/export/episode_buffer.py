"""The episode buffer lerobot's ``add_frame`` builds, built for a whole episode at once.

lerobot 0.6.1's ``save_episode(episode_data=...)`` takes a pre-built episode: per feature a
sequence of per-frame values (image features: PNG paths), plus ``size``, ``task`` (one string per
frame), ``episode_index``, ``frame_index`` and ``timestamp`` (``frame_index / fps``, as
``add_frame`` computes it). ``index`` and ``task_index`` are filled in by ``save_episode``.
"""

from __future__ import annotations

import numpy as np


def episode_buffer(
    features: dict,
    *,
    episode_index: int,
    fps: int,
    task: str,
    columns: dict[str, np.ndarray],
    image_paths: dict[str, list[str]],
) -> dict:
    """The buffer of one episode of ``len`` frames: ``columns`` and ``image_paths`` per feature.

    Raises:
        ValueError: a feature without values, or columns of different lengths.
    """
    lengths = {len(v) for v in (*columns.values(), *image_paths.values())}
    if len(lengths) != 1:
        raise ValueError(f"episode columns differ in length: {sorted(lengths)}")
    (size,) = lengths
    # the key order of add_frame's buffer: lerobot's statistics follow it
    computed = {
        "episode_index": episode_index,
        "frame_index": list(range(size)),
        "timestamp": [i / fps for i in range(size)],
        "index": [],
        "task_index": [],
    }
    buffer: dict = {"size": size, "task": [task] * size}
    for key in features:
        if key in computed:
            buffer[key] = computed[key]
        elif key in image_paths:
            buffer[key] = image_paths[key]
        elif key in columns:
            buffer[key] = columns[key]
        else:
            raise ValueError(f"no values for feature {key!r}")
    return buffer
