"""A zstd frame whose header declares 2 GiB (#57 item 11) is refused by its declared size before
it is inflated: it took a 2.6 GB peak before its size was compared with the row's. The reader
runs in a child whose own peak memory is measured."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

from episode_warehouse.frames.rows import offsets_file
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.files import read_meta
from tests.helpers import build_atari

pytestmark = pytest.mark.integration
PROJECT = Path(__file__).resolve().parents[2]


def _bomb(size: int = 2**31) -> bytes:
    """A valid zstd frame of ``size`` zero bytes, its content size in the header (~64 KB)."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(out, size=size, closefd=False) as w:
        chunk = bytes(1 << 24)
        for _ in range(size // len(chunk)):
            w.write(chunk)
    return out.getvalue()


def test_a_zstd_frame_declaring_2_gib_is_refused_before_it_inflates(tmp_path):
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_atari(layout, "Pong/1", 1, episodes=10)
    ted = tmp_path / "ted"
    shutil.copytree(layout.ted_dir("atari", "Pong/1"), ted)
    file = read_meta(ted).keys["observation"]["file"]
    offsets = np.load(ted / offsets_file(file))
    data = (ted / file).read_bytes()
    bomb = _bomb()
    grown = len(bomb) - int(offsets[4] - offsets[3])
    spliced = data[: offsets[3]] + bomb + data[offsets[4] :]
    offsets[4:] += grown
    for name in (file, offsets_file(file)):
        (ted / name).unlink()
    (ted / file).write_bytes(spliced)
    np.save(ted / offsets_file(file), offsets)
    script = f"""
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.ted.open import open_ted_folder
def peak():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
td = open_ted_folder({str(ted)!r})
before = peak()
try:
    td["observation"][3]
except CorruptInputError as exc:
    print("refused", peak() - before, "|", exc)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    word, grown_mb, _, message = done.stdout.split(" ", 3)
    assert word == "refused", done.stdout
    assert "2,147,483,648 bytes (its header says)" in message
    assert int(grown_mb) < 100, f"peak grew {grown_mb} MB"
