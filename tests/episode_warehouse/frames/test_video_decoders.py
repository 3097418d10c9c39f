"""Video cameras under concurrency and over long time spans (#57 items 6 and 7).

A LeRobot AV1 dataset (written by lerobot) is read from many threads at once: ``open_ted``
indexed from 16 threads, ``selection_stats`` of a camera (a thread per core), and 24 viewer frame
requests together through the viewer's own routes. Each ran one decoder from several threads
and crashed the process (exit 139); the children here must exit 0 with every frame equal to
the same frames read on one thread. A static 600 s video read at five timestamps decodes five
frames, not the span between them (the peak memory of a child says so).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from episode_warehouse.paths import WarehouseLayout
from tests.helpers import VIDEO_SPEC, build_lerobot
from warehouse_fixtures.av1 import write_av1

pytestmark = pytest.mark.integration
PROJECT = Path(__file__).resolve().parents[3]
SPEC = VIDEO_SPEC


def _child(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter (a crash there is an exit code here, not ours)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def video_root(tmp_path_factory, lerobot_video) -> Path:
    root = tmp_path_factory.mktemp("video-threads") / "wh"
    build_lerobot(WarehouseLayout.local(root), SPEC, lerobot_video)
    return root


def test_many_threads_read_one_video_camera_and_get_the_frames_of_one_thread(video_root):
    done = _child(f"""
        import numpy as np, torch
        from concurrent.futures import ThreadPoolExecutor
        from episode_warehouse import open_ted
        td = open_ted("lerobot", "{SPEC.repo_id}", "{video_root}")
        cams = [("observation", "image", c) for c in ("top", "wrist")]
        n = td.batch_size[0]
        truth = {{c: np.stack([td[c][i].numpy() for i in range(n)]) for c in cams}}
        rng = np.random.default_rng(0)
        jobs = [(cams[k % 2], rng.integers(0, n, 6)) for k in range(96)]
        jobs += [(cams[k % 2], slice(k % n, min(n, k % n + 9))) for k in range(32)]
        def read(job):
            cam, index = job
            index = torch.from_numpy(index) if isinstance(index, np.ndarray) else index
            return td[cam][index].numpy(), truth[cam][index.numpy() if hasattr(index, "numpy")
                                                           else index]
        with ThreadPoolExecutor(16) as pool:
            for got, want in pool.map(read, jobs):
                assert np.array_equal(got, want)
        from episode_warehouse.frames.video import _OPEN, VideoFiles
        assert _OPEN.count() <= VideoFiles.KEPT
        print("ok", n)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == "ok"


def test_statistics_of_a_video_camera_on_a_thread_per_core(video_root):
    done = _child(f"""
        import json
        import numpy as np
        from episode_warehouse import open_ted
        from episode_warehouse.loading import select_episodes, selection_stats
        sel = select_episodes(
            "SELECT source, partition, episode, start, length FROM episodes", root="{video_root}")
        from episode_warehouse.catalog.statistics import publish_statistics
        from episode_warehouse.paths import WarehouseLayout
        # the statistics stage of `warehouse materialize lerobot` (it exited 139 there)
        publish_statistics(WarehouseLayout.local("{video_root}"), "lerobot", "{SPEC.repo_id}",
                           code_version="t")
        stats = selection_stats(sel, [("observation", "image", "top")], use_catalog=False)
        frames = open_ted("lerobot", "{SPEC.repo_id}", "{video_root}")["observation", "image",
                                                                          "top"][:].numpy()
        want = frames.astype(np.float64).transpose(1, 0, 2, 3).reshape(3, -1).mean(1)
        got = np.asarray(stats[("observation", "image", "top")]["mean"], np.float64)
        print(json.dumps([got.tolist(), want.tolist()]))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    got, want = json.loads(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.ravel(got), want, rtol=1e-6)


def test_24_viewer_frame_requests_at_once(video_root):
    starts = np.concatenate([[0], np.cumsum(SPEC.lengths)[:-1]]).tolist()
    done = _child(f"""
        import asyncio, io
        import httpx, numpy as np, PIL.Image
        from episode_warehouse import open_ted
        from episode_warehouse.storage import parse_root
        from episode_warehouse.viewer.app import build_app
        app = build_app(parse_root("{video_root}"))
        td = open_ted("lerobot", "{SPEC.repo_id}", "{video_root}")
        asks = [(e, t, cam) for e in range(3) for t in (0, 5, 9, 12) for cam in ("top", "wrist")]
        async def main():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                return await asyncio.gather(*(c.get("/api/frame", params=dict(
                    source="lerobot", partition="{SPEC.repo_id}", episode=e, t=t,
                    camera="observation/image/" + cam)) for e, t, cam in asks))
        answers = asyncio.run(main())
        starts = {starts}
        for (e, t, cam), answer in zip(asks, answers):
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-content-type-options"] == "nosniff"
            pixels = np.asarray(PIL.Image.open(io.BytesIO(answer.content)))
            want = td["observation", "image", cam][starts[e] + t].numpy().transpose(1, 2, 0)
            assert np.array_equal(pixels, want), (e, t, cam)
        print("ok", len(answers))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", "24"]


def test_rows_far_apart_in_a_static_video_decode_only_their_frames(tmp_path):
    """Five rows at 0 .. 599.9 s of a ~160 KB static MP4 (6,000 frames of 128x128): the source
    reader decodes those five frames in runs, where it decoded all 6,000 at once (2.3 GB)."""
    video = tmp_path / "ds" / "videos" / "observation.images.top" / "chunk-000" / "file-000.mp4"
    video.parent.mkdir(parents=True)
    frames = np.zeros((6000, 3, 128, 128), dtype=np.uint8)
    frames[:, 0, 32:96, 32:96] = 200
    write_av1(frames, video, fps=10)
    del frames
    done = _child(f"""
        import numpy as np
        from episode_warehouse.sources.lerobot.video import VideoFrames
        def peak():  # this process's own high-water mark (ru_maxrss carries the parent's)
            status = open("/proc/self/status").read()
            return int(status.split("VmHWM:")[1].split()[0])
        reader = VideoFrames(__import__("pathlib").Path("{tmp_path / "ds"}"),
                             "observation.images.top")
        reader._open(reader.path(0, 0))  # the decoder's own memory is not what is measured
        before = peak()
        pixels, index = reader.episode(0, 0, 0.0, np.array([0.0, 150.0, 300.0, 450.0, 599.9]))
        grown = peak() - before
        assert index.tolist() == [0, 1500, 3000, 4500, 5999], index
        assert pixels.shape == (5, 3, 128, 128) and (pixels[:, 0, 64, 64] > 150).all()
        print(grown // 1024)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    grown_mb = int(done.stdout.split()[-1])
    assert grown_mb < 100, f"peak memory grew by {grown_mb} MB for five frames"


def test_frames_asked_in_any_order_decode_in_runs_as_one_by_one_seeks_give_them(tmp_path):
    """The one wrapper (frames/video.py), shared by the TED's video cameras and the LeRobot
    source: frames asked out of order, repeated and with gaps come back in the order asked,
    equal to torchcodec's exact seek of each (``get_frame_at``), with its presentation times;
    a run never spans a gap or more than RUN_FRAMES frames."""
    from torchcodec.decoders import VideoDecoder

    from episode_warehouse.frames.video import RUN_FRAMES, _runs, decode_indices

    path = tmp_path / "v.mp4"
    frames = np.zeros((150, 3, 64, 96), dtype=np.uint8)  # (SVT-AV1's least: 64x64)
    for i in range(150):  # each frame its own picture: a wrong index shows
        frames[i, i % 3, (i // 5) % 64, :] = 255
        frames[i, :, :, i % 96] = 128
    write_av1(frames, path, fps=10)
    index = np.array([140, 3, 4, 4, 5, 90, 2, 0, *range(10, 10 + RUN_FRAMES + 5)], np.int64)
    decoder = VideoDecoder(str(path), seek_mode="exact")
    got, pts = decode_indices(decoder, index, "v.mp4", "none")
    reference = VideoDecoder(str(path), seek_mode="exact")
    for k, i in enumerate(index.tolist()):
        frame = reference.get_frame_at(i)
        np.testing.assert_array_equal(got[k], frame.data.numpy(), err_msg=f"frame {i}")
        assert pts[k] == pytest.approx(frame.pts_seconds)
    runs = [sorted(index[r].tolist()) for r in _runs(index)]
    assert runs[:4] == [[0], [2, 3, 4, 4, 5], list(range(10, 10 + RUN_FRAMES)),
                        list(range(10 + RUN_FRAMES, 15 + RUN_FRAMES))]  # fmt: skip
    assert all(max(r) - min(r) < RUN_FRAMES for r in runs)
