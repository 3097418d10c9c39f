"""A training node for the bucket tests: a fresh process with an empty cache that selects
episodes with SQL over the bucket's catalog and streams them.

    python -m tests.bucket.stream_node SPEC.json

SPEC: sql, out (an .npz of every streamed key, episodes concatenated, plus ``selection_index``),
report (JSON: rows selected, bytes the streams fetched). The root, emulator, scratch and cache
come from the environment.
"""

import json
import sys
from pathlib import Path

import numpy as np


def main(spec_path: str) -> None:
    from episode_warehouse.loading import EpisodeStream, select_episodes

    spec = json.loads(Path(spec_path).read_text())
    selection = select_episodes(spec["sql"])
    stream = EpisodeStream(selection, shuffle=False)
    items = [ref.read() for ref in stream]
    keys = [k for k in items[0].keys(True, True)]
    arrays = {
        "/".join(k) if isinstance(k, tuple) else k: np.concatenate(
            [i.get(k).numpy() for i in items]
        )
        for k in keys
    }
    np.savez(spec["out"], **arrays)
    Path(spec["report"]).write_text(
        json.dumps({"rows": selection.rows(), "bytes_fetched": stream.cache.bytes_fetched})
    )


if __name__ == "__main__":
    main(sys.argv[1])
