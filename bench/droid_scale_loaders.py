"""``bench.droid_scale``'s loaders part (#59): the trainers' loaders over every range of the
DROID-scale warehouse the cluster part built (64 ranges of 32 shards).

Each loader runs in a child process (``python -m bench.droid_scale_loaders KIND ...``) with a
torch DataLoader of 2 workers and batches of 32, over openpi's selection (successful
episodes, their non-idle steps, ``select_episodes``):

- ``stream``: ``EpisodeStream`` (slices of 16 steps, each range's tail shorter than 16 left
  out, ``drop_last``), ``window``: ``StepWindowDataset`` (one
  step and its three cameras, ``DistributedSampler``), ``vla``: ``VLADataset`` (the mixture
  ``[("droid", 1.0)]`` with the same selection, statistics pooled over every range);
- two ranks (``rank``, ``world_size=2``) one after the other, one epoch each (``stream`` and
  ``window``): every delivered step is recorded by its action (a random vector a step, unique
  in the fixture) and the union is compared with the selection's steps: exactly once;
- time to the first batch, steady samples/s, and each worker's open files, memory maps of
  the warehouse's files and RSS, sampled every 2 s.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench.measure import _status

OPENPI = (
    "SELECT source, partition, episode, start + r[1] AS start, r[2] - r[1] AS length "
    "FROM episodes, UNNEST(nonidle_ranges) AS u(r) WHERE dataset = 'droid' AND success "
    "ORDER BY partition, start"
)
CAMERAS = ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left")
BATCH = 32
SLICE = 16  # EpisodeStream's slices (the tail shorter than it dropped: batches of one shape)


def _worker_facts(root: str) -> dict[int, dict]:
    """Each DataLoader worker's descriptors (all, and those of files under ``root``), maps of
    files under ``root``, RSS (MB). Most descriptors of a worker are torch's: the shared memory
    of the batches it hands on (``file_descriptor`` sharing)."""
    import psutil

    out = {}
    for child in psutil.Process().children(recursive=True):
        try:
            fds = child.num_fds()
            warehouse_fds = sum(
                1 for fd in Path(f"/proc/{child.pid}/fd").iterdir() if root in _link(fd)
            )
            maps = sum(
                1 for line in Path(f"/proc/{child.pid}/maps").read_text().splitlines()
                if root in line
            )  # fmt: skip
            memory = _status(child.pid)
        except (psutil.Error, OSError):
            continue
        out[child.pid] = {"fds": fds, "warehouse_fds": warehouse_fds, "maps": maps,
                          "rss_mb": sum(memory.get(k, 0) for k in ("RssAnon", "RssFile",
                                                                    "RssShmem")) / 1024,
                          "anon_mb": memory.get("RssAnon", 0) / 1024}  # fmt: skip
    return out


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed since it was listed
        return ""


def _files_of(root: str) -> str:
    """Where a root's files are read from on this machine: the folder, or a bucket root's
    local copy and cache (both under one folder in ``bucket_part``)."""
    if root.startswith("gs://"):
        return str(Path(os.environ["EPISODE_WAREHOUSE_CACHE"]).parent)
    return root


class Watch:
    """Samples the workers every 2 s while a loader runs."""

    def __init__(self, root: str) -> None:
        self.root, self.samples, self.stop = _files_of(root), [], threading.Event()
        self.started = time.perf_counter()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.perf_counter() - self.started, _worker_facts(self.root)))
            self.stop.wait(2)

    def summary(self) -> dict:
        self.stop.set()
        self.thread.join()
        facts = [(t, f) for t, f in self.samples if f]
        if not facts:
            return {}
        end = facts[-1][0]
        window = min(60.0, end / 4)

        def peak(field: str, keep=lambda t: True) -> float:
            return max((w[field] for t, f in facts if keep(t) for w in f.values()), default=0)

        def first(t: float) -> bool:
            return t <= window

        def last(t: float) -> bool:
            return t >= end - window

        return {
            "warehouse_files_open_per_worker_max": int(peak("warehouse_fds")),
            "fds_per_worker_first_window": int(peak("fds", first)),
            "fds_per_worker_last_window": int(peak("fds", last)),
            "file_maps_per_worker_max": int(peak("maps")),
            "rss_per_worker_peak_mb": round(peak("rss_mb")),
            "rss_per_worker_first_window_mb": round(peak("rss_mb", first)),
            "rss_per_worker_last_window_mb": round(peak("rss_mb", last)),
            "anon_rss_per_worker_first_window_mb": round(peak("anon_mb", first)),
            "anon_rss_per_worker_last_window_mb": round(peak("anon_mb", last)),
            "window_s": round(window),
            "sampled_s": round(end),
        }


def _loader(kind: str, root: str, rank: int, selection):
    from torch.utils.data import DataLoader

    if kind == "stream":
        from episode_warehouse.loading import EpisodeStream, ted_collate

        dataset = EpisodeStream(selection, SLICE, drop_last=True, rank=rank, world_size=2)
        return DataLoader(dataset, batch_size=BATCH, num_workers=2, collate_fn=ted_collate)
    if kind == "window":
        from torch.utils.data.distributed import DistributedSampler

        from episode_warehouse.loading import StepWindowDataset, no_collate

        deltas = {"action": [0], **{("observation", c): [0] for c in CAMERAS}}
        dataset = StepWindowDataset(selection, deltas)
        sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=True, seed=0)
        return DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=2,
                          collate_fn=no_collate)  # fmt: skip
    from episode_warehouse.loading import ted_collate
    from episode_warehouse.standardized import VLADataset

    dataset = VLADataset([("droid", 1.0)], root, selection=selection, rank=rank, world_size=2)
    return DataLoader(dataset, batch_size=BATCH, num_workers=2, collate_fn=ted_collate)


def _step_ids(action) -> np.ndarray:
    """Each step's action vector as one opaque value (a step's identity in the fixture)."""
    # a copy: a view would keep the batch's shared memory alive, and its worker would then
    # allocate (and hold a descriptor for) a new segment for every batch
    rows = np.array(np.asarray(action, np.float64).reshape(-1, action.shape[-1]), copy=True)
    return rows.view(np.dtype((np.void, rows.shape[1] * 8))).ravel()


def child(kind: str, root: str, seconds: str) -> None:
    """One loader, two ranks (one epoch each, or ``seconds`` for ``vla``): one JSON line."""
    from episode_warehouse.loading import select_episodes

    started = time.perf_counter()
    selection = select_episodes(OPENPI, root)
    select_s = time.perf_counter() - started
    delivered, first_batch_s, samples, steady = [], [], 0, 0.0
    watch = Watch(root)
    for rank in (0, 1):
        loader = _loader(kind, root, rank, selection)
        t0 = time.perf_counter()
        t_first = None
        for batch in loader:
            if t_first is None:
                t_first = time.perf_counter()
                first_batch_s.append(t_first - t0)
            else:
                samples += batch.batch_size[0]
            if kind != "vla":
                delivered.append(_step_ids(batch["action"]))
            elif time.perf_counter() - t_first > float(seconds) / 2:
                break
        steady += time.perf_counter() - (t_first or t0)
    facts = watch.summary()
    out = {
        "loader": kind,
        "select_s": round(select_s, 2),
        "selected_ranges": len(selection.length),
        "selected_steps": int(np.sum(selection.length)),
        "first_batch_s_max": round(max(first_batch_s), 2),
        "items_per_s": round(samples / steady, 1),
        "steps_per_s": round(samples * (SLICE if kind == "stream" else 1) / steady, 1),
        **facts,
    }
    if delivered:
        out |= _exactly_once(root, selection, np.concatenate(delivered), kind)
    print(json.dumps(out))


def _exactly_once(root: str, selection, got: np.ndarray, kind: str) -> dict:
    """Compare the delivered steps with the selection's, by their action vectors."""
    from episode_warehouse import open_ted

    td = open_ted("openx", "droid", root=root)
    action = _step_ids(td["action"][:])
    starts = _dataset_rows(root, selection)
    lengths = selection.length if kind != "stream" else selection.length // SLICE * SLICE
    expected = np.concatenate([action[s : s + n] for s, n in zip(starts, lengths, strict=True)])
    if np.unique(expected).size != expected.size:
        raise RuntimeError("the fixture's action vectors are not unique per step")
    values, counts = np.unique(got, return_counts=True)
    missing = np.setdiff1d(expected, values).size
    extra = np.setdiff1d(values, expected).size
    repeats = int((counts > 1).sum())
    # DistributedSampler pads the shorter rank with the first indices (torch's rule)
    padding = (-expected.size) % 2 if kind == "window" else 0
    return {
        "delivered_steps": int(got.size),
        "missing_steps": int(missing),
        "foreign_steps": int(extra),
        "repeated_steps": repeats,
        "sampler_padding": padding,
        "exactly_once": missing == 0 and extra == 0 and repeats == padding,
    }


def _dataset_rows(root: str, selection) -> np.ndarray:
    """Each selected row's first row in ``open_ted("openx", "droid")`` (ranges in key order)."""
    from episode_warehouse.catalog import run_query
    from episode_warehouse.storage import parse_root

    sql = (
        "SELECT partition, sum(length) FROM episodes WHERE dataset = 'droid' "
        "GROUP BY partition ORDER BY partition"
    )
    _, rows = run_query(parse_root(root), sql)
    offsets, total = {}, 0
    for partition, length in rows:
        offsets[partition] = total
        total += int(length)
    return np.array(
        [offsets[p] + int(s) for p, s in zip(selection.partition, selection.start, strict=True)]
    )


def long_child(root: str, seconds: str) -> None:
    """``StepWindowDataset`` (rank 0 of 2, 2 workers) epoch after epoch for ``seconds``: each
    worker's RSS in the first and the last minute (one JSON line)."""
    from episode_warehouse.loading import select_episodes

    selection = select_episodes(OPENPI, root)
    watch, samples, started, epochs = Watch(root), 0, time.perf_counter(), 0
    while time.perf_counter() - started < float(seconds):
        loader = _loader("window", root, 0, selection)
        loader.sampler.set_epoch(epochs)
        for batch in loader:
            samples += batch.batch_size[0]
            if time.perf_counter() - started >= float(seconds):
                break
        epochs += 1
    elapsed = time.perf_counter() - started
    print(json.dumps({"loader": "window", "seconds": round(elapsed), "epochs_started": epochs,
                      "steps_per_s": round(samples / elapsed, 1), **watch.summary()}))  # fmt: skip


def pooled_statistics(root: Path) -> dict:
    """The mixture ``[("droid", 1.0)]`` resolved (statistics pooled over every range), timed,
    and its action mean and std against those of every range's actions concatenated."""
    from episode_warehouse.standardized.mixtures import resolve
    from episode_warehouse.standardized.reader import locate

    started = time.perf_counter()
    entries = resolve([("droid", 1.0)], root)
    seconds = time.perf_counter() - started
    pooled = entries[0][3]["action"]
    actions = np.concatenate(
        [np.asarray(locate(s, p, root).array("action"), np.float64) for s, p, _, _ in entries]
    )
    return {
        "ranges": len(entries),
        "resolve_s": round(seconds, 2),
        "transitions": int(entries[0][3]["num_transitions"]),
        "mean_max_error": float(np.abs(np.asarray(pooled["mean"]) - actions.mean(0)).max()),
        "std_max_error": float(np.abs(np.asarray(pooled["std"]) - actions.std(0)).max()),
    }


def build_standardized(root: Path) -> dict:
    """Every range's standardized stage, in this process (the VLA loader's input)."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout = WarehouseLayout.local(root)
    keys = sorted(p.name for p in (root / "ted" / "openx").iterdir() if p.name.startswith("droid@"))
    started = time.perf_counter()
    for key in keys:
        build_standardized_stage(layout, "openx", key, code_version="bench")
    return {"ranges": len(keys), "seconds": round(time.perf_counter() - started, 1)}


def bytes_child(root: str, items: str) -> None:
    """Bytes an ``EpisodeStream`` (slices of 16, in this process) fetches for its first
    ``items`` slices from a bucket root, per sample and per step (one JSON line)."""
    from episode_warehouse.loading import EpisodeStream, select_episodes

    stream = EpisodeStream(select_episodes(OPENPI, root), SLICE, drop_last=True)
    count = steps = 0
    for ref in stream:  # each slice read alone, here: the bytes are what it fetched
        count, steps = count + 1, steps + ref.read().batch_size[0]
        if count == int(items):
            break
    fetched = stream.cache.bytes_fetched
    print(json.dumps({"slices": count, "steps": steps, "bytes_fetched": fetched,
                      "bytes_per_slice": round(fetched / count),
                      "bytes_per_step": round(fetched / steps)}))  # fmt: skip


def build_into_bucket(folder: Path, keys: list[str], url: str) -> float:
    """``keys``' ranges through mirror, decoded, TED, catalog rows and standardized into the
    bucket root ``url`` (the emulator's), in this process; seconds."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout = WarehouseLayout.from_root(url)
    started = time.perf_counter()
    for key in keys:
        mirror_openx(str(folder), key, layout.raw_dir("openx", key), root=layout.root,
                     code_version="bench")  # fmt: skip
        decode_openx(layout, key, code_version="bench")
        build_ted_stage(layout, "openx", key, code_version="bench")
        publish_catalog_rows(layout, "openx", key, code_version="bench", run_id="bench")
        build_standardized_stage(layout, "openx", key, code_version="bench")
    return time.perf_counter() - started


def bucket_part(folder: Path, ranges: int, seconds: int) -> dict:
    """The first ``ranges`` ranges built into a ``gs://`` root on the emulator (its own
    process, a thread a connection), then every loader over them, rank by rank, and the
    bytes a stream's slice fetches."""
    import tempfile

    from bench.droid_scale_plane import RANGE
    from bench.measure import environment, run_child
    from episode_warehouse.gcs import gcs_client
    from warehouse_fixtures.gcs_emulator import emulator_process

    keys = [f"droid@{f:05d}-{f + RANGE - 1:05d}" for f in range(0, ranges * RANGE, RANGE)]
    work = Path(tempfile.mkdtemp(prefix="bench-droid-scale-bucket-"))
    url = "gs://droid-scale-wh/root"
    report: dict = {"ranges": len(keys)}
    with emulator_process(threaded=True) as endpoint, environment(
        STORAGE_EMULATOR_HOST=endpoint, EPISODE_WAREHOUSE_LOCAL_COPY=str(work / "copy"),
        EPISODE_WAREHOUSE_CACHE=str(work / "cache"),
    ):  # fmt: skip
        gcs_client(endpoint).create_bucket("droid-scale-wh")
        report["build_s"] = round(build_into_bucket(folder, keys, url), 1)
        for kind in ("stream", "window", "vla"):
            report[kind] = run_child("bench.droid_scale_loaders", [kind, url, str(seconds)]).result
        report["stream_bytes"] = run_child(
            "bench.droid_scale_loaders", ["bytes", url, "2000"]
        ).result
    return report


def loaders_part(root: Path, seconds: int, rss_seconds: int) -> dict:
    """The standardized stage, every loader in its own child process, the long run, and the
    pooled statistics."""
    from bench.measure import run_child

    report: dict = {"standardized": build_standardized(root)}
    for kind in ("stream", "window", "vla"):
        report[kind] = run_child(
            "bench.droid_scale_loaders", [kind, str(root), str(seconds)]
        ).result
    if rss_seconds:
        report["window_long_run"] = run_child(
            "bench.droid_scale_loaders", ["long", str(root), str(rss_seconds)]
        ).result
    report["pooled_statistics"] = pooled_statistics(root)
    return report


if __name__ == "__main__":
    if sys.argv[1] == "long":
        long_child(*sys.argv[2:])
    elif sys.argv[1] == "bytes":
        bytes_child(*sys.argv[2:])
    else:
        child(*sys.argv[1:])
    sys.exit(0)
