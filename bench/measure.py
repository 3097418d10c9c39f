"""Run a benchmark step in a child process and measure wall time and peak memory.

Peak memory is sampled from /proc/<pid>/status every 20 ms, split as the performance notes
advise: RssAnon (heap: the real memory budget) and RssFile+RssShmem (mapped file pages, which
the kernel can drop), plus VmHWM (the kernel's own peak of both).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Measurement:
    seconds: float
    peak_anon_mb: float
    peak_file_mb: float
    vm_hwm_mb: float
    result: dict


def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[key] = int(value.split()[0])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (worker pools fork from a server process: grandchildren)."""
    try:
        children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []
    return [d for c in children for d in (c, *_descendants(c))]


def run_child(module: str, args: list[str]) -> Measurement:
    """``python -m module *args``; the child prints one JSON line last. Memory is summed over
    the child and every process below it (worker processes)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args], stdout=subprocess.PIPE, text=True
    )
    anon = file = hwm = 0
    while proc.poll() is None:
        pids = [proc.pid, *_descendants(proc.pid)]
        stats = [_status(p) for p in pids]
        anon = max(anon, sum(s.get("RssAnon", 0) for s in stats))
        file = max(file, sum(s.get("RssFile", 0) + s.get("RssShmem", 0) for s in stats))
        hwm = max(hwm, _status(proc.pid).get("VmHWM", 0))
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    out = proc.stdout.read().strip().splitlines()
    if proc.returncode != 0 or not out:
        raise RuntimeError(f"{module} {args} failed with {proc.returncode}")
    return Measurement(seconds, anon / 1024, file / 1024, hwm / 1024, json.loads(out[-1]))


def median_ms(fn, repeats: int = 7) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, in milliseconds (0.1 ms)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 1)


def save_report(name: str, report: dict) -> None:
    """Write ``bench/results/<name>.json`` (not committed)."""
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=1))


def dispatch(children: dict, main) -> None:
    """Run ``children[argv[1]](*argv[2:])`` in a measured child process, else ``main()``."""
    if len(sys.argv) > 1 and sys.argv[1] in children:
        children[sys.argv[1]](*sys.argv[2:])
    else:
        main()


def tiny() -> bool:
    """Whether this is a tiny run (``BENCH_SIZE=tiny``: the slow tests run every benchmark so
    from a fresh clone, to prove it runs; its figures mean nothing). Child processes inherit it."""
    import os

    return os.environ.get("BENCH_SIZE") == "tiny"


def scaled(full, small):
    """``small`` in a tiny run (:func:`tiny`), else ``full``: a benchmark's size."""
    return small if tiny() else full


@contextlib.contextmanager
def environment(**values: str):
    """``os.environ`` with ``values`` set, as it was afterwards (child processes inherit it)."""
    keep = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def decode_bound(frame_files: list[tuple[np.ndarray, np.ndarray]], processes: int,
                 seconds: float, decoder: str = "torchvision") -> float:  # fmt: skip
    """The decode bound: ``processes`` processes (forked) doing nothing but decode the stored
    JPEG frames of ``frame_files`` (each a camera's offsets and bytes), one thread each, round
    robin, for ``seconds``: frames/s of all together. The baseline a loader over the same frames
    is measured against. ``decoder``: ``"torchvision"`` (``decode_jpeg``, a new tensor a frame:
    issue #58's definition) or ``"simplejpeg"`` (into one reused buffer: the call the loaders
    make since they decode into the batch). Both are libjpeg-turbo's accurate IDCT."""
    import multiprocessing as mp

    start, counts = mp.Barrier(processes + 1), mp.Array("q", processes)

    def decode(k: int) -> None:
        import simplejpeg
        import torch
        from torchvision.io import decode_jpeg

        torch.set_num_threads(1)
        raw = [data[a:b].tobytes() for offsets, data in frame_files
               for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
               if b > a]  # fmt: skip
        if decoder == "torchvision":
            tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in raw]

            def one(i: int) -> None:
                decode_jpeg(tensors[i])
        else:
            sizes = {simplejpeg.decode_jpeg_header(b)[:2] for b in raw}
            out = np.empty((max(h * w for h, w in sizes) * 3,), np.uint8)

            def one(i: int) -> None:
                simplejpeg.decode_jpeg(raw[i], buffer=out)

        start.wait()
        done, t = 0, time.perf_counter()
        while time.perf_counter() - t < seconds:
            one(done % len(raw))
            done += 1
        counts[k] = done

    workers = [mp.get_context("fork").Process(target=decode, args=(k,)) for k in range(processes)]
    for w in workers:
        w.start()
    start.wait()
    t = time.perf_counter()
    for w in workers:
        w.join()
    return sum(counts) / max(time.perf_counter() - t, seconds)


def uv(why: str) -> str:
    """uv: on the PATH, else the one ./test and ./warehouse installed beside the project (this
    checkout's, or the venv's project when a copy of the files runs it). ``why`` completes the
    message when there is none ("installs pylance")."""
    import shutil

    for candidate in (shutil.which("uv"), *(p / ".tools" / "bin" / "uv" for p in (
            Path(__file__).parents[1], Path(sys.prefix).parent))):  # fmt: skip
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise SystemExit(f"this benchmark {why} with uv: run ./test once (it installs uv)")
