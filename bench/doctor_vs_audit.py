"""The integrity audit beside lerobot-doctor (#71 item 3): the same LeRobot datasets, written by
lerobot's own writer with defects planted at known episodes
(``warehouse_fixtures.lerobot_defects``), checked by lerobot-doctor 0.2.0 (``lerobot-doctor
check --json``, in its side environment: ``scripts/side_env.sh lerobot-doctor``) and by the
warehouse (ingest, TED, catalog rows with the audit, duplicates). Per defect kind: the planted
episodes each finds, and any episode it flags where nothing was planted.

What the warehouse says comes from where a user reads it: the ``findings`` of the ``episodes``
and ``partitions`` tables, the ``duplicates`` table, or the ingest's refusal (a source it does
not take: the error names the episodes). Doctor's from its JSON messages (it names episodes in
text; a message about the dataset or a file counts for each of its episodes).

    python -m bench.doctor_vs_audit   # the table; bench/results/doctor_vs_audit.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import save_report
from warehouse_fixtures.lerobot_defects import DATASET, Planted, write_all

PROJECT = Path(__file__).resolve().parents[1]

# doctor's messages about one episode ("Episode 4: ..."), by what they say
_EPISODE_REASONS = (
    ("dropped frame", "timestamp_gap"),
    ("non-monotonic", "timestamp_order"),
    ("Mean interval", "timestamp_rate"),
    ("NaN in", "non_finite"),
    ("Inf in", "non_finite"),
    ("frozen", "frozen_action"),
    ("action jump", "action_jump"),
    ("too short", "short_episode"),
    ("single frame", "one_step"),
)
# doctor's messages about the dataset or a file, by what they say: (pattern, kind, episodes)
_DATASET_REASONS = (
    (r"of values at (minimum|maximum)", "clipped_dimension"),
    (r"zero variance|constant dimension|dimensions constant", "constant_dimension"),
    (r"stuck/static in", "stuck_dimension"),
    (r"NaN values|Inf values", "non_finite"),
    (r"shape mismatch|missing features", "schema_change"),
    (r"has \d+ frames, expected", "frame_count"),
    (r"failed to decode", "bad_frame"),
    (r"near-duplicate episode pair", "duplicate"),
)
# the ingest's refusal of a whole source, by what it says
_REFUSALS = (
    ("NaN or infinite", "non_finite"),
    ("schema changes between episodes", "schema_change"),
    ("does not decode", "bad_frame"),
    ("asked,", "frame_count"),
)


def side_doctor() -> Path:
    """lerobot-doctor's command in its side environment (installed on first use)."""
    done = subprocess.run([str(PROJECT / "scripts" / "side_env.sh"), "lerobot-doctor"],
                          capture_output=True, text=True, timeout=1200, check=True,
                          env={**os.environ, "SIDE_ENV_PYTHON": sys.executable})  # fmt: skip
    return Path(done.stdout.strip().splitlines()[-1]).parent / "lerobot-doctor"


def run_doctor(doctor: Path, folder: Path) -> dict:
    done = subprocess.run([str(doctor), "check", str(folder), "--json"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    return json.loads(done.stdout)


def doctor_kinds(report: dict) -> dict[str, set[int]]:
    """Per kind, the episodes doctor names (``DATASET``: a message about the dataset)."""
    found: dict[str, set[int]] = {}
    for check in report["checks"]:
        for message in check["messages"]:
            text, severity = message["message"], message["severity"]
            if severity == "PASS":
                continue
            episode = re.match(r"Episode (\d+): (.*)", text)
            if episode:
                for phrase, kind in _EPISODE_REASONS:
                    if phrase in episode.group(2):
                        found.setdefault(kind, set()).add(int(episode.group(1)))
                continue
            named = re.search(r"(?:of|in) episode (\d+)|Episode (\d+) has", text)
            if named:
                for phrase, kind in _EPISODE_REASONS:
                    if phrase in text:
                        found.setdefault(kind, set()).add(int(named.group(1) or named.group(2)))
                continue
            for pattern, kind in _DATASET_REASONS:
                if re.search(pattern, text):
                    pairs = [int(i) for i in re.findall(r"\((\d+), ", text)]
                    found.setdefault(kind, set()).update(pairs or [DATASET])
                    if kind == "duplicate":
                        found[kind].update(int(j) for j in re.findall(r", (\d+)\)", text))
    return found


def warehouse_kinds(planted: Planted, root: Path) -> tuple[dict[str, set[int]], str]:
    """Per kind, the episodes the warehouse names (ingest, audit, duplicates), and how."""
    from episode_warehouse.catalog import run_query
    from episode_warehouse.errors import CorruptInputError
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot
    from episode_warehouse.stages import build_ted_stage, publish_catalog_rows
    from episode_warehouse.stages.curation import publish_duplicates

    layout = WarehouseLayout.local(root)
    key = planted.folder.relative_to(planted.folder.parents[1]).as_posix()
    try:
        dataset = open_lerobot_folder(planted.folder)
        build_if_changed(layout.root, layout.decoded_dir("lerobot", key), {"bench": 1},
                         lambda dec: decode_lerobot(dataset, dec))  # fmt: skip
    except CorruptInputError as exc:
        kinds = [kind for phrase, kind in _REFUSALS if phrase in str(exc)]
        listed = re.search(r"episodes? ([\d, ]+)", str(exc))
        episodes = {int(e) for e in listed.group(1).split(",") if e.strip()} if listed else set()
        return {kind: episodes for kind in kinds}, f"refused at ingest: {exc.what[:150]}"
    build_ted_stage(layout, "lerobot", key, code_version="bench")
    publish_catalog_rows(layout, "lerobot", key, code_version="bench", run_id="bench")
    publish_duplicates(layout)
    found: dict[str, set[int]] = {}
    where = f"partition = '{key}'"
    _, rows = run_query(layout.root, f"SELECT episode, findings FROM episodes WHERE {where}")
    for episode, findings in rows:
        for f in findings:
            found.setdefault(f["kind"], set()).add(int(episode))
    _, rows = run_query(layout.root, f"SELECT findings FROM partitions WHERE {where}")
    for f in rows[0][0] or []:
        found.setdefault(f["kind"], set()).add(DATASET)
    _, rows = run_query(layout.root, "SELECT episode FROM duplicates WHERE "
                        f"{where} AND near_duplicate_of IS NOT NULL")  # fmt: skip
    found.setdefault("duplicate", set()).update(int(r[0]) for r in rows)
    return {k: v for k, v in found.items() if v}, "catalog findings, duplicates table"


def bit_rot(planted: Planted, root: Path, episode: int) -> set[int]:
    """One bit flipped in a stored frame of ``episode`` of the warehouse's copy (the TED):
    the episodes whose ``bad_frame`` the audit then reports (doctor never sees this copy)."""
    from episode_warehouse.curation.audit import audit_partition
    from episode_warehouse.curation.partition_arrays import PartitionArrays
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.ted.files import read_meta

    key = planted.folder.relative_to(planted.folder.parents[1]).as_posix()
    folder = WarehouseLayout.local(root).ted_dir("lerobot", key)
    camera = next(k for k, e in read_meta(folder).keys.items() if "frames" in e)
    frames = folder / read_meta(folder).keys[camera]["file"]
    offsets = np.load(frames.with_name(frames.name.replace(".frames", ".offsets.npy")))
    row = int(PartitionArrays.open(folder).starts[episode]) + 3
    data = bytearray(frames.read_bytes())
    data[(int(offsets[row]) + int(offsets[row + 1])) // 2] ^= 0x10
    frames.unlink()  # a hard link of the decoded stage's file: write a new one
    frames.write_bytes(bytes(data))
    found = audit_partition(PartitionArrays.open(folder), fps=None).by_episode
    return {e for e, fs in enumerate(found) if any(f["kind"] == "bad_frame" for f in fs)}


def _widen(found: dict[str, set[int]], episodes: set[int]) -> dict[str, set[int]]:
    """A message about the dataset (or a file of it) counts for each of its episodes too."""
    return {k: v | episodes if DATASET in v else v for k, v in found.items()}


def _flagged(found: dict[str, set[int]], clean: set[int]) -> list[int]:
    return sorted(set().union(*found.values()) & clean) if found else []


def compare(work: Path, doctor: Path) -> dict:
    """Every planted dataset checked by both; per kind, what each found."""
    rows, timings = [], {}
    for planted in write_all(work / "src"):
        t0 = time.perf_counter()
        by_doctor = doctor_kinds(run_doctor(doctor, planted.folder))
        t1 = time.perf_counter()
        by_warehouse, how = warehouse_kinds(planted, work / "wh")
        t2 = time.perf_counter()
        timings[planted.name] = {"doctor_s": round(t1 - t0, 2), "warehouse_s": round(t2 - t1, 2)}
        episodes = planted.clean.union(*planted.kinds.values()) - {DATASET}
        by_doctor, by_warehouse = _widen(by_doctor, episodes), _widen(by_warehouse, episodes)
        if planted.name == "per_episode":
            rot = max(planted.clean)
            planted.kinds["bit_rot"] = {rot}
            planted.clean.discard(rot)
            by_warehouse["bit_rot"] = bit_rot(planted, work / "wh", rot)
        for kind, episodes in sorted(planted.kinds.items()):
            rows.append({
                "dataset": planted.name, "kind": kind, "planted": sorted(episodes),
                "doctor": sorted(episodes & by_doctor.get(kind, set())),
                "warehouse": sorted(episodes & by_warehouse.get(kind, set())),
                "how": how,
            })  # fmt: skip
        rows.append({"dataset": planted.name, "kind": "(clean episodes flagged)",
                     "planted": sorted(planted.clean),
                     "doctor": _flagged(by_doctor, planted.clean),
                     "warehouse": _flagged(by_warehouse, planted.clean), "how": how})  # fmt: skip
    return {"rows": rows, "timings": timings}


def _show(episodes: list[int]) -> str:
    return ", ".join("dataset" if i == DATASET else str(i) for i in episodes) or "-"


def table(report: dict) -> str:
    lines = ["| dataset | kind | planted in | doctor finds | warehouse finds |",
             "|---|---|---|---|---|"]  # fmt: skip
    show = _show
    for r in report["rows"]:
        lines.append(f"| {r['dataset']} | {r['kind']} | {show(r['planted'])} | "
                     f"{show(r['doctor'])} | {show(r['warehouse'])} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    doctor = side_doctor()
    with tempfile.TemporaryDirectory() as tmp:
        report = compare(Path(tmp), doctor)
    recall: dict[str, list[int]] = {}
    for r in report["rows"]:
        if not r["kind"].startswith("("):
            d, w = recall.setdefault(r["kind"], [0, 0, 0]), len(r["planted"])
            d[0], d[1], d[2] = d[0] + len(r["doctor"]), d[1] + len(r["warehouse"]), d[2] + w
    report["recall"] = {k: {"doctor": v[0] / v[2], "warehouse": v[1] / v[2]}
                        for k, v in recall.items()}  # fmt: skip
    print(table(report))
    print("timings (s):", json.dumps(report["timings"]))
    save_report("doctor_vs_audit", report)


if __name__ == "__main__":
    main()
