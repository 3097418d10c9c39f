"""The two lerobot internals the fast export relies on, behind one version check.

1. **A whole episode's buffer.** lerobot 0.6.1's ``save_episode(episode_data=...)`` takes the
   buffer ``add_frame`` would have built: per feature a sequence of per-frame values (image
   features: PNG paths), plus ``size``, ``task`` (one string per frame), ``episode_index``,
   ``frame_index`` and ``timestamp`` (``frame_index / fps``, as ``add_frame`` computes it), in
   ``add_frame``'s key order (lerobot's statistics follow it). Building it per episode lets
   worker processes write the PNGs ahead instead of one ``add_frame`` call per frame.
2. **Batched image embedding.** lerobot 0.6.1 embeds an episode's images with
   ``io_utils.embed_images`` (``datasets.Dataset.map(embed_table_storage, batched=False)``): a
   one-row Arrow table per frame, ~0.4 ms each. Mapping it over batches of 1,000 rows builds the
   same table; while an export runs, lerobot's writer module uses the batched version, and the
   original is restored exactly (reference-counted) after the last export.

Why the private path is worth it: together they make the export 3.3-5.2x faster than the
per-frame path (docs/benchmarks.md); the tests compare both paths' datasets file by file. Any
lerobot outside :data:`SUPPORTED` gets the plain per-frame path (``add_frame`` for every frame),
slower and the same.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version

import numpy as np
from packaging.specifiers import SpecifierSet

log = logging.getLogger(__name__)

SUPPORTED = SpecifierSet("==0.6.1")  # the writer whose buffer and per-row embedding we know
_BATCH_ROWS = 1000
_lock = threading.Lock()
_users = 0
_original = None  # lerobot's own embed_images while ours is installed


def installed_version() -> str:
    return version("lerobot")


def fast_path_available() -> bool:
    """Whether the installed lerobot is one whose internals this module was checked against."""
    installed = installed_version()
    ok = installed in SUPPORTED
    if not ok:
        log.warning(
            "lerobot %s is not %s: exporting frame by frame with add_frame (slower, same data)",
            installed,
            SUPPORTED,
        )
    return ok


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
    lengths = {len(v) for v in columns.values()} | {len(v) for v in image_paths.values()}
    if len(lengths) != 1:
        raise ValueError(f"episode columns differ in length: {sorted(lengths)}")
    (size,) = lengths
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


@contextmanager
def quiet_datasets() -> Iterator[None]:
    """In the block, ``datasets`` shows no progress bars (lerobot's writer makes a "Map" bar
    and a "Saving" bar per episode: noise over the export's own progress)."""
    import datasets

    shown = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if shown:
            datasets.enable_progress_bars()


def _embed_images_batched(dataset):
    """``lerobot.datasets.io_utils.embed_images``, mapped over batches of rows."""
    from datasets.table import embed_table_storage

    fmt = dataset.format
    dataset = dataset.with_format("arrow")
    with quiet_datasets():
        dataset = dataset.map(embed_table_storage, batched=True, batch_size=_BATCH_ROWS)
    return dataset.with_format(**fmt)


@contextmanager
def batched_image_embedding() -> Iterator[None]:
    """In the block, lerobot's episode writer embeds images in batches (supported lerobot only)."""
    global _users, _original
    from lerobot.datasets import dataset_writer

    with _lock:
        if _users == 0:
            _original = dataset_writer.embed_images
            dataset_writer.embed_images = _embed_images_batched
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                dataset_writer.embed_images = _original
                _original = None
