"""Benchmark: the hub as a source and a destination, through the hub stand-in on loopback.

Baselines are huggingface_hub's own calls on the same repo in the same run:

- read: the LeRobot raw stage (``mirror_dataset`` from ``hf://datasets``: listing, verified
  downloads into huggingface_hub's cache, links into the raw folder) against
  ``snapshot_download`` of the same commit into a fresh cache; then a new revision that changes
  one data file: bytes and time of the re-fetch;
- publish: ``publish_folder`` (plan against the branch, one commit) into a new repo against
  ``HfApi.upload_folder`` into another; then both again with nothing changed.

Loopback measures the client's own cost (hashing, verifying, linking, planning), not the
network: on the real hub both sides wait on the same transfers.

    python -m bench.hub
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from episode_warehouse.storage.local import LocalRoot

os.environ.setdefault("HF_HUB_DISABLE_XET", "1")  # the stand-in speaks LFS (read at import)
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from bench.measure import save_report, scaled  # noqa: E402

EPISODES, LENGTH = scaled(60, 3), scaled(100, 10)  # 6,000 frames
CAMERAS = {"top": (96, 128), "wrist": (64, 64)}
TOKEN = "hf_bench_token"
REPEAT = scaled(3, 1)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # upload_folder warns on an empty commit
    from huggingface_hub import HfApi, snapshot_download

    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.hub.client import HubClient
    from episode_warehouse.hub.publish import publish_folder
    from episode_warehouse.hub.url import HubUrl
    from episode_warehouse.sources.lerobot.mirror import mirror_dataset
    from warehouse_fixtures.hub.server import HubServer
    from warehouse_fixtures.hub.store import HubStore
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    work = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    spec = LeRobotSpec(
        repo_id="bench/scene",
        lengths=(LENGTH,) * EPISODES,
        cameras=CAMERAS,
        data_files_size_in_mb=5,
        frames="scene",
    )
    write_lerobot_dataset(spec, work / "src")
    folder = work / "src" / spec.repo_id
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    total = _size(folder)
    report: dict = {"files": len(files), "MB": round(total / 1e6, 1)}
    with HubServer(HubStore(work / "store"), tokens=(TOKEN,)) as server:
        os.environ.update(HF_ENDPOINT=server.url, HF_TOKEN=TOKEN)
        server.store.create_repo(spec.repo_id)
        server.store.commit_folder(spec.repo_id, folder, tag="v3.0")

        # -- read (REPEAT fresh caches each, alternating; medians) ------------------------------
        theirs_s, ours_s = [], []
        for i in range(REPEAT):
            t = time.perf_counter()
            snapshot_download(
                spec.repo_id,
                repo_type="dataset",
                cache_dir=work / f"cache-{i}",
                endpoint=server.url,
            )
            theirs_s.append(time.perf_counter() - t)
            os.environ["HF_HOME"] = str(work / f"hf-home-{i}")
            t = time.perf_counter()
            mirror_dataset(
                open_blob_store("hf://datasets"),
                spec.repo_id,
                work / f"raw-{i}",
                root=LocalRoot(work),
                code_version="b",
            )
            ours_s.append(time.perf_counter() - t)
        theirs, ours = statistics.median(theirs_s), statistics.median(ours_s)
        report["read"] = {
            "snapshot_download_s": round(theirs, 3),
            "ours_s": round(ours, 3),
            "ours_MB_per_s": round(total / 1e6 / ours, 1),
            "ratio_vs_snapshot_download": round(theirs / ours, 2),
        }
        data = sorted((folder / "data").rglob("*.parquet"))
        # a new revision replacing one data file (its last byte flipped), v3.0 moved onto it
        old = data[-1].read_bytes()
        name = str(data[-1].relative_to(folder))
        server.store.commit(spec.repo_id, {name: old[:-1] + bytes([old[-1] ^ 1])}, tag="v3.0")
        t = time.perf_counter()
        _, mirror = mirror_dataset(
            open_blob_store("hf://datasets"),
            spec.repo_id,
            work / "raw-0",
            root=LocalRoot(work),
            code_version="b",
        )
        report["read"]["new_revision_one_file"] = {
            "s": round(time.perf_counter() - t, 3),
            "MB_fetched": round(mirror.stats.downloaded_bytes / 1e6, 2),
            "files_fetched": len(mirror.downloaded),
        }

        # -- publish (REPEAT new repos each, alternating; medians) ------------------------------
        api = HfApi(endpoint=server.url, token=TOKEN)
        client = HubClient(repo_type="dataset")
        times: dict[str, dict[str, list[float]]] = {
            a: {"theirs": [], "ours": []} for a in ("first", "unchanged")
        }
        uploaded: dict[str, tuple[int, int]] = {}
        for i in range(REPEAT):
            api.create_repo(f"bench/theirs-{i}", repo_type="dataset")
            for attempt in ("first", "unchanged"):
                t = time.perf_counter()
                api.upload_folder(
                    repo_id=f"bench/theirs-{i}", repo_type="dataset", folder_path=folder
                )
                times[attempt]["theirs"].append(time.perf_counter() - t)
                t = time.perf_counter()
                done = publish_folder(
                    folder, HubUrl("dataset", f"bench/ours-{i}"), client=client, message="b"
                )
                times[attempt]["ours"].append(time.perf_counter() - t)
                uploaded[attempt] = (len(done.uploaded), done.bytes_uploaded)
        rounds = {}
        for attempt, got in times.items():
            theirs, ours = statistics.median(got["theirs"]), statistics.median(got["ours"])
            rounds[attempt] = {
                "upload_folder_s": round(theirs, 3),
                "ours_s": round(ours, 3),
                "ratio_vs_upload_folder": round(theirs / ours, 2),
                "ours_files_uploaded": uploaded[attempt][0],
                "ours_MB_uploaded": round(uploaded[attempt][1] / 1e6, 1),
            }
        report["publish"] = rounds
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    save_report("hub", report)


if __name__ == "__main__":
    main()
