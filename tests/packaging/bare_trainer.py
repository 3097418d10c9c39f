"""A training script run with the bare package only (``pip install episode-warehouse``, no
extras): streams a SQL selection from the root in argv[1] and reports what it read and which of
the pipeline's packages it found importable.

    python tests/packaging/bare_trainer.py ROOT
"""

import importlib.util
import json
import sys

from torch.utils.data import DataLoader

from episode_warehouse import open_ted
from episode_warehouse.loading import EpisodeStream, no_collate, select_episodes

PIPELINE = ("dagster", "lerobot", "celery", "redis", "psycopg2", "kubernetes", "cv2", "PIL",
            "gcp_storage_emulator", "datasets", "torchrl", "matplotlib")  # fmt: skip

if __name__ == "__main__":
    root = sys.argv[1]
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes ORDER BY episode LIMIT 3",
        root=root,
    )
    stream = EpisodeStream(sel, slice_len=16, seed=0)
    loader = DataLoader(stream, batch_size=None, num_workers=2, collate_fn=no_collate)
    rows = [[int(i["selection_index"][0]), int(i["step"][0]), int(i["observation"].sum())]
            for i in loader]  # fmt: skip
    td = open_ted(sel.source[0], sel.partition[0], root=root)
    print(json.dumps({
        "items": sorted(rows),
        "steps": int(sel.length.sum()),
        "ted_rows": td.batch_size[0],
        "importable": [m for m in PIPELINE if importlib.util.find_spec(m) is not None],
    }))  # fmt: skip
