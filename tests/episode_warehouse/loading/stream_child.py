"""A training process for the resume tests: reads part of an epoch, saves its state, exits.

    python -m tests.episode_warehouse.loading.stream_child SPEC.json

SPEC: root, sql, slice_len, seed, epoch, rank, world_size, workers, take (items to read, None:
all), state_in (a pickled state to resume from, or null), state_out (pickled), items_out (JSON:
[selection row, first step, length] per item).
"""

import json
import pickle
import sys
from pathlib import Path


def read(spec: dict) -> tuple[list, object]:
    """The items one process reads for ``spec``, and the state it would save."""
    from torch.utils.data import DataLoader
    from torchdata.stateful_dataloader import StatefulDataLoader

    from episode_warehouse.loading import EpisodeStream, no_collate, select_episodes

    selection = select_episodes(spec["sql"], root=spec["root"])
    stream = EpisodeStream(
        selection,
        spec["slice_len"],
        seed=spec["seed"],
        rank=spec["rank"],
        world_size=spec["world_size"],
    )
    stream.set_epoch(spec["epoch"])
    state = pickle.loads(Path(spec["state_in"]).read_bytes()) if spec["state_in"] else None
    workers = spec["workers"]
    if workers:
        loader = StatefulDataLoader(
            stream, batch_size=None, num_workers=workers, collate_fn=no_collate
        )
        if state is not None and not state.get("merged"):
            loader.load_state_dict(state)
        elif state is not None:
            stream.load_state_dict(state)
            loader = StatefulDataLoader(
                stream, batch_size=None, num_workers=workers, collate_fn=no_collate
            )
    else:
        if state is not None:
            stream.load_state_dict(state)
        loader = DataLoader(stream, batch_size=None, num_workers=0, collate_fn=no_collate)
    items = []
    for item in loader:
        items.append(
            [int(item["selection_index"][0]), int(item["step"][0]), int(item.batch_size[0])]
        )
        if spec["take"] is not None and len(items) >= spec["take"]:
            break
    return items, (loader.state_dict() if workers else stream.state_dict())


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    items, out = read(spec)
    with open(spec["state_out"], "wb") as fh:
        pickle.dump(out, fh)
    with open(spec["items_out"], "w") as fh:
        json.dump(items, fh)


if __name__ == "__main__":
    main(sys.argv[1])
