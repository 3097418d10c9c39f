"""The Atari source's partitions as listed now (either layout), for its sensor."""

from __future__ import annotations

from episode_warehouse.blobstore import BlobStore
from episode_warehouse.sources.atari.games import parse_partition_key
from episode_warehouse.sources.atari.rlu_files import parse_file_name as parse_rlu_name
from episode_warehouse.sources.fingerprints import partition_fingerprints


def atari_fingerprints(store: BlobStore) -> dict[str, str]:
    """``{"Pong/5": fingerprint}`` for every valid game/run with files, in either layout
    (``Pong/5/replay_logs/...`` or ``Pong/run_5-NNNNN-of-MMMMM``)."""
    groups: dict[str, list] = {}
    for blob in store.list(""):
        parts = blob.name.split("/")
        if len(parts) == 4 and parts[2] == "replay_logs":  # Dopamine
            key = f"{parts[0]}/{parts[1]}"
        elif len(parts) == 2 and (parsed := parse_rlu_name(parts[1])) is not None:  # RLU
            key = f"{parts[0]}/{parsed[0]}"
        else:
            continue
        groups.setdefault(key, []).append([parts[-1], blob.generation, blob.crc32c, blob.size])
    return partition_fingerprints(groups, parse_partition_key, "Atari source")
