"""Where a LeRobot dataset keeps its frames, by format version: the one difference between the
versions the decoder sees (the metadata of each is read by ``dataset.py`` / ``v21.py``).

- v3.0 (lerobot >= 0.4): many episodes a file, ``data/chunk-000/file-000.parquet`` and
  ``videos/<camera>/chunk-000/file-000.mp4``; an episode's frames start at its
  ``from_timestamp`` in the video file.
- v2.1 (lerobot <= 0.3.3, most datasets on the hub): one file an episode and camera,
  ``data/chunk-000/episode_000000.parquet`` and
  ``videos/chunk-000/<camera>/episode_000000.mp4``, each video starting at 0 s. The chunk of
  episode ``e`` is ``e // chunks_size``; we address a v2.1 episode's file as (chunk, e).

The templates are ours, not the dataset's ``data_path``/``video_path`` (those are outside input:
a template of ``../../x`` would read anywhere); a dataset whose templates differ from its
version's is refused by name (``check_templates``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import CorruptInputError, FormatVersionError


@dataclass(frozen=True)
class Layout:
    version: str
    data: str  # relative path, .format(chunk=, file=)
    video: str  # relative path, .format(key=, chunk=, file=)
    info_data: str  # what lerobot writes into info.json's data_path for this version
    info_video: str

    def data_path(self, folder: Path, chunk: int, file: int) -> Path:
        return folder / self.data.format(chunk=chunk, file=file)

    def video_path(self, folder: Path, key: str, chunk: int, file: int) -> Path:
        return folder / self.video.format(key=key, chunk=chunk, file=file)


V30 = Layout(
    "v3.0",
    "data/chunk-{chunk:03d}/file-{file:03d}.parquet",
    "videos/{key}/chunk-{chunk:03d}/file-{file:03d}.mp4",
    "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
    "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
)
V21 = Layout(
    "v2.1",
    "data/chunk-{chunk:03d}/episode_{file:06d}.parquet",
    "videos/chunk-{chunk:03d}/{key}/episode_{file:06d}.mp4",
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
    "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
)
LAYOUTS = {layout.version: layout for layout in (V30, V21)}
READS = " and ".join(LAYOUTS)  # for messages: "v3.0 and v2.1"
# (major, minor) of each version read, newest first
READ_VERSIONS = sorted(((int(v[1]), int(v[3])) for v in LAYOUTS), reverse=True)
_VERSION = re.compile(r"v(\d+)\.(\d+)")
V20_TO_V21 = "python -m lerobot.datasets.v21.convert_dataset_v20_to_v21 --repo-id={repo_id}"


def version_of(tag: object) -> tuple[int, int] | None:
    """``(3, 0)`` of ``"v3.0"``; None for anything else."""
    m = _VERSION.fullmatch(tag) if isinstance(tag, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def unreadable(
    version: object, subject: str, repo_id: str = "<owner>/<name>"
) -> FormatVersionError:
    """The error for a dataset of a ``codebase_version`` no layout reads, with its way out."""
    found = version_of(version)
    if found is None:
        what = (
            "no codebase_version" if version is None else f"codebase_version {str(version)[:40]!r}"
        ) + f": not a LeRobot {' or '.join(LAYOUTS)} dataset"
        fix = "check the folder is a LeRobot dataset (meta/info.json as lerobot writes it)"
    elif found > READ_VERSIONS[0]:
        what = f"a LeRobot {version} dataset, newer than the {READS} this warehouse reads"
        fix = "upgrade the warehouse (a newer lerobot wrote this dataset)"
    else:
        what = f"a LeRobot {version} dataset; this warehouse reads {READS}"
        fix = (
            "convert it to v2.1 with lerobot 0.3.3 "
            f"({V20_TO_V21.format(repo_id=repo_id)}; v2.1 is read as it is)"
        )
    return FormatVersionError(what, subject=subject, fix=fix)


def check_templates(info: dict, layout: Layout, subject: str) -> None:
    """info.json's ``data_path`` / ``video_path``, where given, are its version's."""
    for field, ours in (("data_path", layout.info_data), ("video_path", layout.info_video)):
        theirs = info.get(field)
        if theirs is not None and theirs != ours:
            raise CorruptInputError(
                f"info.json's {field} is {str(theirs)[:200]!r}; a LeRobot {layout.version} "
                f"dataset's is {ours!r}",
                subject=subject,
                fix="this warehouse reads the files where lerobot writes them; restore the "
                "dataset's layout (download it again)",
            )
