"""Benchmark: DROID's three 180x320 JPEG cameras, shuffled over every episode, against Lance's
own PyTorch loader over the same JPEG bytes (#58's goal), all figures from one run.

1. DROID fixture shards (``warehouse_fixtures.droid``: DROID's schema, three 180x320 JPEG
   cameras) built into a warehouse folder, and into a ``gs://`` root on the GCS emulator, by
   the stages themselves (mirror, decoded, TED, catalog rows).
2. The same JPEG bytes (the TED's stored frames: the bytes the source published) and actions
   written to a Lance dataset, a row a step (``lance.write_dataset``). pylance is not a project
   dependency: the benchmark installs it once into ``bench/data/lance-site`` (uv, ``--target``,
   its dependencies being the project's own) and appends that folder to the Lance children's
   ``sys.path``.
3. Same run, same machine, DataLoader of 2 workers, batches of 32 drawn by one shuffle over every
   step of every episode, each sample one step's three decoded cameras and its action:
   - ``ours``: ``StepWindowDataset`` over the catalog's selection of every episode
     (``no_collate``: a batch is written into the worker's shared-memory slot), from the folder;
   - ``lance``: ``lance.torch.data.SafeLanceDataset`` (the map-style dataset; ``take`` of a
     batch's rows in ``__getitems__``) with a collate that decodes each JPEG with torchvision's
     ``decode_jpeg`` (libjpeg-turbo) and stacks the batch; workers started by ``spawn`` (Lance
     is not fork-safe, its docs say);
   - ``lance_into_batch``: the same with a collate that decodes each JPEG with simplejpeg
     straight into the batch's memory, the call ours makes (the stronger Lance figure counts);
   - ``ours_gs``: ``ours`` from the bucket root;
   - ``bound``: 2 processes doing nothing but ``decode_jpeg`` on the same stored frames;
     ``bound_into_buffer``: the same with simplejpeg into one buffer (the loaders' call).
   Two rounds, the best of each; the first batch is not timed.
4. ``--rss-seconds`` of ``ours`` with each worker's RSS sampled (first and last minute).

The pixels are checked first: a batch's frames from each loader equal a ``decode_jpeg`` of the
stored bytes of the steps it names.

    python -m bench.droid_lance [--shards 8] [--per-shard 4] [--range 4] [--seconds 30]
                                [--rounds 2] [--rss-seconds 0]
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.droid import droid_source
from bench.measure import dispatch, environment, run_child, save_report, scaled, uv

DATA = Path(__file__).parent / "data" / "droid_lance"
LANCE_SITE = Path(__file__).parent / "data" / "lance-site"
PYLANCE = "pylance==14.0.2"
CAMERAS = ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left")
BATCH, WORKERS = 32, 2
EVERY_EPISODE = (
    "SELECT source, partition, episode, start, length FROM episodes WHERE dataset = 'droid' "
    "ORDER BY partition, episode"
)
BUCKET = "droid-lance-wh"


def _keys(shards: int, per_range: int) -> list[str]:
    from episode_warehouse.sources.openx.shard_ranges import plan_ranges

    return [r.key for r in plan_ranges("droid", shards, per_range)]


def _install_lance() -> None:
    """pylance into ``bench/data/lance-site`` once (its dependencies are the project's own)."""
    if (LANCE_SITE / "done").exists():
        return
    shutil.rmtree(LANCE_SITE, ignore_errors=True)
    subprocess.run([uv("installs pylance"), "pip", "install", "--quiet", "--python",
                    sys.executable, "--target", str(LANCE_SITE), "--no-deps", PYLANCE],
                   check=True)  # fmt: skip
    (LANCE_SITE / "done").write_text(PYLANCE)


def _import_lance():
    sys.path.append(str(LANCE_SITE))  # appended: the project's numpy and pyarrow come first
    import lance
    import lance.torch.data

    return lance


def _selected_rows(root: str) -> list[tuple[str, np.ndarray]]:
    """Each range's TED rows of every selected step, in the selection's order."""
    from episode_warehouse.catalog import run_query
    from episode_warehouse.storage.local import LocalRoot

    _, rows = run_query(LocalRoot(Path(root)), EVERY_EPISODE)
    out: dict[str, list[np.ndarray]] = {}
    for _source, partition, _episode, start, length in rows:
        out.setdefault(partition, []).append(np.arange(start, start + length))
    return [(key, np.concatenate(parts)) for key, parts in out.items()]


def offsets_of(folder: Path, camera: str) -> np.ndarray:
    return np.load(folder / "observation" / f"{camera}.offsets.npy")


def child_lance_write(root: str, out: str) -> None:
    """The stored JPEG bytes of every selected step and its action as a Lance dataset."""
    import pyarrow as pa

    from episode_warehouse.ted.open import open_ted_folder

    lance = _import_lance()
    started = time.perf_counter()
    tables, jpeg_bytes = [], 0
    for key, rows in _selected_rows(root):
        folder = Path(root) / "ted" / "openx" / key
        columns: dict[str, pa.Array] = {}
        for camera in CAMERAS:
            offsets = offsets_of(folder, camera)
            data = np.fromfile(folder / "observation" / f"{camera}.frames", dtype=np.uint8)
            blobs = [data[offsets[r] : offsets[r + 1]].tobytes() for r in rows]
            columns[camera] = pa.array(blobs, pa.binary())
        action = np.asarray(open_ted_folder(folder)["action"].numpy()[rows], np.float64)
        columns["action"] = pa.FixedSizeListArray.from_arrays(
            pa.array(action.ravel()), action.shape[1]
        )
        columns["range"] = pa.array([key] * len(rows))
        columns["row"] = pa.array(rows, pa.int64())
        tables.append(pa.table(columns))
        jpeg_bytes += sum(int(np.diff(offsets_of(folder, c))[rows].sum()) for c in CAMERAS)
    table = pa.concat_tables(tables)
    shutil.rmtree(out, ignore_errors=True)
    lance.write_dataset(table, out, mode="create")
    size = sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())
    print(json.dumps({"rows": table.num_rows, "write_s": round(time.perf_counter() - started, 1),
                      "bytes": size, "jpeg_bytes": jpeg_bytes}))  # fmt: skip


def _lance_collate(samples: list[dict]) -> dict:
    """A batch of Lance rows: each camera's JPEGs decoded by torchvision (channels first, as
    ours hands them on), stacked; the actions as one tensor."""
    import torch
    from torchvision.io import decode_jpeg

    out = {}
    for camera in CAMERAS:
        frames = [
            decode_jpeg(torch.frombuffer(bytearray(s[camera]), dtype=torch.uint8)) for s in samples
        ]
        out[camera] = torch.stack(frames)
    out["action"] = torch.tensor([s["action"] for s in samples], dtype=torch.float64)
    out["row"] = [(s["range"], s["row"]) for s in samples]
    return out


def _lance_collate_into_batch(samples: list[dict]) -> dict:
    """As :func:`_lance_collate`, each JPEG decoded by simplejpeg straight into the batch's
    channels-last memory: the decoder call ours makes, so Lance's side has it too."""
    import simplejpeg
    import torch

    out = {}
    for camera in CAMERAS:
        height, width = simplejpeg.decode_jpeg_header(samples[0][camera])[:2]
        batch = torch.empty((len(samples), height, width, 3), dtype=torch.uint8)
        memory = batch.numpy()
        for k, s in enumerate(samples):
            simplejpeg.decode_jpeg(s[camera], buffer=memory[k])
        out[camera] = batch.permute(0, 3, 1, 2)
    out["action"] = torch.tensor([s["action"] for s in samples], dtype=torch.float64)
    out["row"] = [(s["range"], s["row"]) for s in samples]
    return out


def _lance_loader(path: str, into_batch: bool = False):
    from torch.utils.data import DataLoader

    lance = _import_lance()
    dataset = lance.torch.data.SafeLanceDataset(path)
    collate = _lance_collate_into_batch if into_batch else _lance_collate
    return DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                      collate_fn=collate, persistent_workers=True, prefetch_factor=4,
                      multiprocessing_context="spawn")  # fmt: skip


def _our_loader(root: str, sampler: list[int] | None = None):
    from torch.utils.data import DataLoader

    from episode_warehouse.loading import StepWindowDataset, no_collate, select_episodes

    selection = select_episodes(EVERY_EPISODE, root)
    windows = {"action": [0], **{("observation", c): [0] for c in CAMERAS}}
    dataset = StepWindowDataset(selection, windows)
    return DataLoader(dataset, batch_size=BATCH, shuffle=sampler is None, sampler=sampler,
                      num_workers=WORKERS, collate_fn=no_collate, persistent_workers=True,
                      prefetch_factor=4)  # fmt: skip


def _frames(batch, camera: str, kind: str) -> np.ndarray:
    if kind == "lance":
        return batch[camera].numpy()
    return np.asarray(batch["observation", camera])[:, 0]


def child_check(root: str, lance_path: str) -> None:
    """One batch from each loader: its frames equal ``decode_jpeg`` of the stored bytes of the
    steps it names (Lance's rows name their range and row; ours are the steps of the sampled
    indices, a dataset index being a step in the selection's order). Ours runs first: its
    workers fork, and Lance is not fork-safe once imported."""
    import torch
    from torchvision.io import decode_jpeg

    @functools.cache
    def camera_file(key: str, camera: str) -> tuple[np.ndarray, np.ndarray]:
        folder = Path(root) / "ted" / "openx" / key
        frames = folder / "observation" / f"{camera}.frames"
        return offsets_of(folder, camera), np.memmap(frames, np.uint8, mode="r")

    def reference(key: str, row: int, camera: str) -> np.ndarray:
        offsets, data = camera_file(key, camera)
        blob = torch.from_numpy(np.array(data[offsets[row] : offsets[row + 1]]))
        return decode_jpeg(blob).numpy()

    steps = [(key, int(r)) for key, rows in _selected_rows(root) for r in rows]
    indices = np.random.default_rng(0).choice(len(steps), BATCH, replace=False).tolist()
    ours = next(iter(_our_loader(root, sampler=indices)))
    compared = 0
    for i, index in enumerate(indices):
        key, row = steps[index]
        for camera in CAMERAS:
            if not np.array_equal(_frames(ours, camera, "ours")[i], reference(key, row, camera)):
                raise SystemExit(f"ours: {key} row {row} {camera} differs from decode_jpeg")
            compared += 1
    lance_batch = next(iter(_lance_loader(lance_path)))
    for i, (key, row) in enumerate(lance_batch["row"]):
        for camera in CAMERAS:
            if not np.array_equal(_frames(lance_batch, camera, "lance")[i],
                                  reference(key, row, camera)):  # fmt: skip
                raise SystemExit(f"lance: {key} row {row} {camera} differs from decode_jpeg")
            compared += 1
    print(json.dumps({"frames_compared": compared, "equal": True}))


def child_stream(kind: str, where: str, seconds: str) -> None:
    """Shuffled batches for ``seconds`` after the first: samples/s, the first batch's
    seconds, each worker's RSS (one JSON line)."""
    from bench.droid_scale_loaders import Watch

    started = time.perf_counter()
    lance = kind.startswith("lance")
    loader = _lance_loader(where, kind == "lance_into_batch") if lance else _our_loader(where)
    watch = Watch(str(Path(where).parent) if lance else where)
    first = None
    count = 0
    while True:
        for _batch in loader:
            if first is None:
                first = time.perf_counter()
                continue
            count += BATCH
            if time.perf_counter() - first > float(seconds):
                break
        else:
            continue
        break
    elapsed = time.perf_counter() - first
    facts = {k: v for k, v in watch.summary().items() if "rss" in k or k == "window_s"}
    print(json.dumps({"samples_per_s": round(count / elapsed, 1),
                      "frames_per_s": round(count * len(CAMERAS) / elapsed, 1),
                      "first_batch_s": round(first - started, 2), "seconds": round(elapsed, 1),
                      **facts}))  # fmt: skip


def child_bound(root: str, seconds: str, decoder: str) -> None:
    """The decode bound (``bench.measure.decode_bound``, one process a worker, ``decoder``) on
    the first range's three cameras: frames/s and samples/s (one JSON line)."""
    from bench.measure import decode_bound

    folder = Path(root) / "ted" / "openx" / _selected_rows(root)[0][0]
    files = [(offsets_of(folder, c), np.fromfile(folder / "observation" / f"{c}.frames", np.uint8))
             for c in CAMERAS]  # fmt: skip
    rate = decode_bound(files, WORKERS, float(seconds), decoder)
    print(json.dumps({"frames_per_s": round(rate, 1),
                      "samples_per_s": round(rate / len(CAMERAS), 1)}))  # fmt: skip


def child_build(src: str, url: str, shards: str, per_range: str) -> None:
    """Every range into ``url`` (a folder or a bucket root) through the stages: seconds."""
    from bench.droid_scale_loaders import build_into_bucket

    seconds = build_into_bucket(Path(src), _keys(int(shards), int(per_range)), url)
    print(json.dumps({"build_s": round(seconds, 1)}))


def _best(kind: str, where: str, seconds: int, rounds: int) -> dict:
    runs = [run_child("bench.droid_lance", ["stream", kind, where, str(seconds)]).result
            for _ in range(rounds)]  # fmt: skip
    return max(runs, key=lambda r: r["samples_per_s"]) | {
        "rounds": [r["samples_per_s"] for r in runs]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=scaled(8, 2))
    parser.add_argument("--per-shard", type=int, default=scaled(4, 1))
    parser.add_argument("--range", type=int, default=scaled(4, 2))
    parser.add_argument("--seconds", type=int, default=scaled(30, 2))
    parser.add_argument("--rounds", type=int, default=scaled(2, 1))
    parser.add_argument("--rss-seconds", type=int, default=0)
    args = parser.parse_args()
    _install_lance()
    src = droid_source(args.shards, args.per_shard)
    root, lance_path = DATA / "root", DATA / "droid.lance"
    report: dict = {"shards": args.shards, "episodes_per_shard": args.per_shard,
                    "batch": BATCH, "workers": WORKERS}  # fmt: skip
    build = [str(src), "", str(args.shards), str(args.range)]
    if not (root / "done").exists():
        shutil.rmtree(root, ignore_errors=True)
        report["build_folder"] = run_child("bench.droid_lance", ["build", *_at(build, root)]).result
        (root / "done").write_text("")
    write = ["lance-write", str(root), str(lance_path)]
    report["lance_write"] = run_child("bench.droid_lance", write).result
    report["pixels"] = run_child("bench.droid_lance", ["check", str(root), str(lance_path)]).result
    for decoder, name in (("torchvision", "bound"), ("simplejpeg", "bound_into_buffer")):
        bound = ["bound", str(root), str(args.seconds), decoder]
        report[name] = run_child("bench.droid_lance", bound).result
    runs = (("ours", root), ("lance", lance_path), ("lance_into_batch", lance_path))
    for kind, where in runs:
        report[kind] = _best(kind, str(where), args.seconds, args.rounds)
    report["ours_vs_lance"] = round(
        report["ours"]["samples_per_s"] / report["lance"]["samples_per_s"], 2
    )
    report["ours_vs_lance_into_batch"] = round(
        report["ours"]["samples_per_s"] / report["lance_into_batch"]["samples_per_s"], 2
    )
    report["ours_vs_bound"] = round(
        report["ours"]["samples_per_s"] / report["bound"]["samples_per_s"], 2
    )
    report["lance_vs_bound"] = round(
        report["lance"]["samples_per_s"] / report["bound"]["samples_per_s"], 2
    )
    report["ours_vs_bound_into_buffer"] = round(
        report["ours"]["samples_per_s"] / report["bound_into_buffer"]["samples_per_s"], 2
    )
    report["bucket"] = _bucket(build, args.seconds, args.rounds)
    report["ours_gs_vs_ours_local"] = round(
        report["bucket"]["ours_gs"]["samples_per_s"] / report["ours"]["samples_per_s"], 2
    )
    if args.rss_seconds:
        report["ours_long_run"] = run_child(
            "bench.droid_lance", ["stream", "ours", str(root), str(args.rss_seconds)]
        ).result
    save_report("droid_lance", report)
    print(json.dumps(report, indent=1))


def _at(build: list[str], url: Path | str) -> list[str]:
    return [build[0], str(url), *build[2:]]


def _bucket(build: list[str], seconds: int, rounds: int) -> dict:
    """The ranges built into a ``gs://`` root on the emulator, then ``ours`` from it."""
    import tempfile

    from episode_warehouse.gcs import gcs_client
    from warehouse_fixtures.gcs_emulator import emulator_process

    work = Path(tempfile.mkdtemp(prefix="bench-droid-lance-"))
    url = f"gs://{BUCKET}/root"
    try:
        with emulator_process(threaded=True) as endpoint, environment(
            STORAGE_EMULATOR_HOST=endpoint, EPISODE_WAREHOUSE_LOCAL_COPY=str(work / "copy"),
            EPISODE_WAREHOUSE_CACHE=str(work / "cache"),
        ):  # fmt: skip
            gcs_client(endpoint).create_bucket(BUCKET)
            out = {"build": run_child("bench.droid_lance", ["build", *_at(build, url)]).result}
            out["ours_gs"] = _best("ours", url, seconds, rounds)
            return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    dispatch(
        {"build": child_build, "lance-write": child_lance_write, "check": child_check,
         "stream": child_stream, "bound": child_bound},
        main,
    )  # fmt: skip
    sys.exit(0)
