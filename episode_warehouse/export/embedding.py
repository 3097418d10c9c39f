"""Embed an episode's PNG files into lerobot's parquet table in batches, not one row at a time.

lerobot 0.6.1 writes an episode's table with ``io_utils.embed_images``, which runs
``datasets.Dataset.map(embed_table_storage, batched=False)``: a one-row Arrow table and a schema
round trip per frame, about 0.4 ms each, more than encoding the frame's PNG. ``embed_table_storage``
works column by column, so mapping it over batches builds the same table; the export tests
compare our datasets with the per-frame path's byte for byte.

While at least one export runs, lerobot's writer module uses :func:`embed_images_batched`;
the original function is restored after the last one. Other lerobot versions are left alone
(the export is then slower, not different).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

CHECKED_LEROBOT = "0.6.1"  # the writer whose per-row embedding this replaces
_BATCH_ROWS = 1000
_lock = threading.Lock()
_users = 0


def embed_images_batched(dataset):
    """``lerobot.datasets.io_utils.embed_images``, mapped over batches of rows."""
    from datasets.table import embed_table_storage

    fmt = dataset.format
    dataset = dataset.with_format("arrow")
    dataset = dataset.map(embed_table_storage, batched=True, batch_size=_BATCH_ROWS)
    return dataset.with_format(**fmt)


@contextmanager
def batched_image_embedding(enabled: bool = True) -> Iterator[bool]:
    """In the block, lerobot's episode writer embeds images in batches; yields whether it does."""
    global _users
    import lerobot
    from lerobot.datasets import dataset_writer, io_utils

    active = enabled and lerobot.__version__ == CHECKED_LEROBOT
    if enabled and not active:
        log.warning(
            "lerobot %s is not %s: images are embedded row by row (slower, same result)",
            lerobot.__version__,
            CHECKED_LEROBOT,
        )
    if not active:
        yield False
        return
    with _lock:
        _users += 1
        dataset_writer.embed_images = embed_images_batched
    try:
        yield True
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                dataset_writer.embed_images = io_utils.embed_images
