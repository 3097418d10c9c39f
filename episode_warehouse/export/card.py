"""The dataset card (the repo's README.md) of a LeRobot export published to the hub.

The YAML header is what the hub indexes: ``license``, ``task_categories: [robotics]``, the
``LeRobot`` tag lerobot's own cards carry, ``fps`` and ``robot_type`` (from ``meta/info.json``),
and a ``configs`` entry so the hub's viewer reads the parquet files. The text says where every
episode came from: the selection's SQL, each source partition with its TED version and the URL
its files were read from (the pinned manifest is ``meta/warehouse_selection.json``), the counts,
and how to load it.

Every value that came from a source (robot type, partition names, URLs, the SQL) enters the
Markdown through ``guards.text`` (escaped, or verbatim inside a code fence), and only public URLs
are named: a partition read from a local folder says so without naming the folder.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from episode_warehouse.export.record import ExportRecord
from episode_warehouse.guards.text import (
    LICENSE_ID,
    code_block,
    markdown_code,
    markdown_text,
    one_line,
    public_url,
)

UNKNOWN_LICENSE = "other"


@dataclass(frozen=True)
class SourcePartition:
    """One partition the export read: its TED version and where its source files came from."""

    source: str
    partition: str
    ted_version: str
    source_url: str
    episodes: int
    frames: int
    license: str | None = None  # the source's own, where it states one


def _size_category(frames: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if frames < limit:
            return label
    for limit, label in ((1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if frames < limit:
            return label
    return "10M<n<100M" if frames < 100_000_000 else "n>1T"


def _read_from(url: str) -> str:
    public = public_url(url)
    return markdown_text(public) if public else "a local folder (not published)"


def dataset_card(
    repo_id: str,
    info: Mapping,
    export: ExportRecord,
    partitions: list[SourcePartition],
    *,
    license: str | None = None,
    revision: str = "main",
) -> str:
    """The card's text. ``info`` is ``meta/info.json``, ``export`` the export's record
    (``meta/warehouse_export.json``); ``license`` an id the hub knows (``cc-by-4.0``,
    ``apache-2.0``, ...) given by the publisher, else the sources' own when every partition
    states the same one, else ``other``."""
    stated = {
        p.license if p.license and LICENSE_ID.fullmatch(p.license) else None for p in partitions
    }
    carried = len(stated) == 1 and None not in stated
    license = license or (stated.pop() if carried else None)
    fps = info.get("fps") if isinstance(info.get("fps"), int | float) else one_line(info.get("fps"))
    robot = one_line(info.get("robot_type") or "unknown", max_chars=64)
    episodes, frames = export.episodes, export.frames
    sources = sorted({p.source for p in partitions})
    header: dict = {
        "license": license or UNKNOWN_LICENSE,
        **({} if license else {"license_name": "see-sources"}),
        "task_categories": ["robotics"],
        "tags": list(dict.fromkeys(["LeRobot", "episode-warehouse", *sources, robot])),
        "size_categories": [_size_category(frames)],
        "fps": fps,
        "robot_type": robot,
        "configs": [{"config_name": "default", "data_files": "data/*/*.parquet"}],
    }
    query = export.request.get("query")
    picked = Counter((e[0], e[1]) for e in export.episode_list)
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {markdown_text(repo_id)}",
        "",
        f"A LeRobot v3.0 dataset of **{int(episodes)} episodes** ({int(frames)} frames at "
        f"{markdown_text(fps)} fps, robot type {markdown_code(robot)}), exported by "
        "episode-warehouse from "
        + ("a SQL selection over its episode catalog." if query else "one catalog partition."),
        "",
        "## Selection",
        "",
    ]
    if query:
        lines += code_block(query, "sql")
    else:
        lines += ["Every episode of the partition below, in episode order."]
    lines += [
        "",
        "## Where every episode came from",
        "",
        "| source | partition | episodes taken | of | TED version | read from | license |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in partitions:
        lines.append(
            f"| {markdown_text(p.source)} | {markdown_text(p.partition)} | "
            f"{picked[(p.source, p.partition)]} | {int(p.episodes)} | "
            f"{markdown_code(p.ted_version, in_table=True)} | {_read_from(p.source_url)} | "
            f"{markdown_text(p.license or 'not stated')} |"
        )
    lines += [
        "",
        "The selection is pinned in `meta/warehouse_selection.json` (every episode's source, "
        "partition, episode id and step range, and each partition's TED version); "
        "`meta/warehouse_export.json` is the export's record. A warehouse that holds these TED "
        "versions reads the same episodes again with "
        "`episode_warehouse.loading.Selection.load(path, allow_stale=False)`.",
        "",
        "## License",
        "",
    ]
    if license and carried:
        lines.append(f"{markdown_code(license)}, as every source above states it on its own card.")
    elif license:
        lines.append(f"{markdown_code(license)}, as the publisher stated it.")
    else:
        lines.append(
            "Not every source states one license the warehouse could carry, so the header "
            "says `license: other`. The sources' own terms apply: check each source above "
            "before use."
        )
    load = f"LeRobotDataset({json.dumps(repo_id, allow_nan=False)}"
    load += ")" if revision == "main" else f", revision={json.dumps(revision, allow_nan=False)})"
    lines += [
        "",
        "## Load it",
        "",
        "```python",
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset",
        "",
        f"ds = {load}",
        "frame = ds[0]",
        "```",
        "",
    ]
    return "\n".join(lines)
