"""Benchmark: which lossless codec stores raw frames (Dopamine checkpoints, Minari, LeRobot image
arrays), by size against the raw frame and decode speed, on real Atari frames (the 554 84x84
grey frames of the RL Unplugged Asterix sample, written by the TFDS authors) and on 32x32 RGB
frames made from them (downscaled, three channels from three consecutive frames: Minari's
small renderings are of that size).

    python -m bench.frame_codecs

Baseline: the raw frame (today's decoded TED row), ratio 1.0 and a copy as its decode.
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path

import numpy as np

from bench.measure import save_report

SAMPLE = Path(__file__).resolve().parents[2] / "shared/samples/rl_unplugged_atari/Asterix"
REPEATS = 5


def atari_frames() -> np.ndarray:
    """The sample's frames, (N, 84, 84) uint8, decoded as the RL Unplugged source decodes them."""
    from episode_warehouse.sources.atari.rlu_episode import decode_frames, parse_record
    from episode_warehouse.tfrecord.records import iter_gzip_records

    out = []
    for file in sorted(SAMPLE.glob("run_*")):
        with open(file, "rb") as fh:
            for offset, data in iter_gzip_records(fh, str(file)):
                record = parse_record(data, f"{file} at {offset}")
                frames = np.empty((record.steps, 84, 84), np.uint8)
                decode_frames(record.pngs, frames, str(file))
                out.append(frames)
    return np.concatenate(out)


def small_frames(atari: np.ndarray) -> np.ndarray:
    import cv2

    small = np.stack([cv2.resize(f, (32, 32), interpolation=cv2.INTER_AREA) for f in atari])
    return np.stack([small[:-2], small[1:-1], small[2:]], axis=-1)  # (N, 32, 32, 3)


def codecs() -> dict:
    import cv2
    import zstandard

    def png(level):
        def enc(f):
            return cv2.imencode(".png", f, [cv2.IMWRITE_PNG_COMPRESSION, level])[1].tobytes()

        def dec(b, shape):
            return cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_UNCHANGED)

        return enc, dec

    def zstd(level):
        c = zstandard.ZstdCompressor(level=level)
        d = zstandard.ZstdDecompressor()

        def dec(b, shape):
            return np.frombuffer(d.decompress(b), np.uint8).reshape(shape)

        return (lambda f: c.compress(f.tobytes())), dec

    return {
        "raw": (lambda f: f.tobytes(), lambda b, s: np.frombuffer(b, np.uint8).reshape(s).copy()),
        "png-1": png(1),
        "png-3": png(3),
        "png-9": png(9),
        "zstd-1": zstd(1),
        "zstd-3": zstd(3),
        "zstd-9": zstd(9),
        "zstd-19": zstd(19),
        **_lz4(),
        "zlib-6": (
            lambda f: zlib.compress(f.tobytes(), 6),
            lambda b, s: np.frombuffer(zlib.decompress(b), np.uint8).reshape(s),
        ),
    }


def _lz4() -> dict:
    """LZ4 where it is installed (not a dependency: ``uv pip install lz4`` to compare it;
    measured here: 0.116x the raw bytes on Atari, 1.6 us to decode)."""
    try:
        import lz4.block
    except ImportError:
        return {}
    return {
        "lz4": (
            lambda f: lz4.block.compress(f.tobytes()),
            lambda b, s: np.frombuffer(lz4.block.decompress(b), np.uint8).reshape(s),
        )
    }


def measure(frames: np.ndarray) -> dict:
    out = {}
    raw = frames[0].nbytes
    for name, (enc, dec) in codecs().items():
        t = time.perf_counter()
        blobs = [enc(f) for f in frames]
        encode_s = (time.perf_counter() - t) / len(frames)
        for blob, frame in zip(blobs, frames, strict=True):
            if not np.array_equal(dec(blob, frame.shape), frame):
                raise SystemExit(f"{name} is not lossless")
        best = float("inf")
        for _ in range(REPEATS):
            t = time.perf_counter()
            for blob in blobs:
                dec(blob, frames.shape[1:])
            best = min(best, (time.perf_counter() - t) / len(frames))
        size = sum(len(b) for b in blobs) / len(frames)
        out[name] = {
            "bytes_per_frame": round(size, 1),
            "ratio_vs_raw": round(size / raw, 4),
            "encode_us": round(encode_s * 1e6, 1),
            "decode_us": round(best * 1e6, 1),
            "decode_frames_per_s": round(1 / best),
        }
    return out


def main() -> None:
    import cv2

    cv2.setNumThreads(1)
    atari = atari_frames()
    report = {
        "frames": {"atari_84x84_grey": len(atari), "small_32x32_rgb": len(atari) - 2},
        "atari_84x84_grey": measure(atari),
        "small_32x32_rgb": measure(small_frames(atari)),
    }
    for kind in ("atari_84x84_grey", "small_32x32_rgb"):
        print(f"{kind}: codec  bytes/frame  ratio-vs-raw  decode us  (baseline: raw)")
        raw_us = report[kind]["raw"]["decode_us"]
        for name, row in report[kind].items():
            print(
                f"  {name:8s} {row['bytes_per_frame']:9.1f} {row['ratio_vs_raw']:8.3f}x "
                f"{row['decode_us']:8.1f} ({row['decode_us'] / raw_us:.1f}x raw)"
            )
    save_report("frame_codecs", report)


if __name__ == "__main__":
    main()
