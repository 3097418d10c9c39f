"""Make a branch of a hub repository hold exactly a local folder, in one commit.

The plan compares every local file with the branch's listing (the sha256 of an LFS file, the
git blob id of any other), so unchanged files are neither uploaded nor committed; files the
branch has and the folder does not are deleted in the same commit (``.gitattributes`` is kept).
The commit names the head it was planned against as its parent, so a branch that moved
meanwhile is refused rather than overwritten. Nothing is visible on the hub until the commit
lands: an interrupted publish leaves the repo as it was, and a rerun sends only the LFS objects
the hub does not have yet.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from episode_warehouse.errors import ConfigError, SourceMissingError
from episode_warehouse.hub.client import (
    BranchMovedError,
    HubClient,
    HubFile,
    file_sha256,
    git_blob_id,
)
from episode_warehouse.hub.url import HubUrl, check_revision

log = logging.getLogger(__name__)
KEEP = (".gitattributes",)
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Published:
    """What a publish did: the commit the branch now points at and what changed."""

    url: str  # hf://datasets/OWNER/NAME@<commit>
    commit: str
    created: bool  # the repo was created by this publish
    uploaded: tuple[str, ...]  # paths added or changed
    deleted: tuple[str, ...]
    unchanged: int
    bytes_uploaded: int = field(default=0)


def _same(path: Path | bytes, remote: HubFile | None) -> bool:
    if remote is None:
        return False
    if isinstance(path, bytes):
        blob = hashlib.sha1(b"blob %d\0" % len(path) + path).hexdigest()
        ids = {hashlib.sha256(path).hexdigest(), blob}
        return len(path) == remote.size and remote.content_id in ids
    if path.stat().st_size != remote.size:
        return False
    return (file_sha256(path) if remote.sha256 else git_blob_id(path)) == remote.content_id


@dataclass(frozen=True)
class _Plan:
    add: dict[str, Path | bytes]
    delete: list[str]
    unchanged: int
    bytes: int


def _plan(client: HubClient, repo_id: str, head: str, files: dict[str, Path | bytes]) -> _Plan:
    """What commit ``head`` lacks of ``files``, and what it has beyond them."""
    remote = client.files(repo_id, head)
    add = {p: c for p, c in files.items() if not _same(c, remote.get(p))}
    delete = [p for p in remote if p not in files and p not in KEEP]
    size = sum(len(c) if isinstance(c, bytes) else c.stat().st_size for c in add.values())
    return _Plan(add, delete, len(files) - len(add), size)


def local_files(folder: Path) -> dict[str, Path]:
    """Every regular file under ``folder`` by its path inside it (links are refused: a publish
    sends what the folder holds, never what a link points at)."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if path.is_symlink():
                raise ConfigError(
                    "the folder to publish holds a link",
                    subject=str(path),
                    fix="publish a folder of plain files (re-run the export)",
                )
        for name in filenames:
            path = Path(dirpath) / name
            out[path.relative_to(folder).as_posix()] = path
    return dict(sorted(out.items()))


def publish_folder(
    folder: Path,
    target: HubUrl,
    *,
    client: HubClient,
    replace: dict[str, bytes] | None = None,
    leave_out: Collection[str] = (),
    private: bool = False,
    message: str,
    description: str = "",
) -> Published:
    """Make branch ``target.revision`` (default ``main``) of ``target.repo_id`` hold exactly
    the files of ``folder``, with ``replace`` (path -> bytes, e.g. a generated README.md) in
    place of, or beside, the folder's own, and without the paths in ``leave_out`` (notes of
    the folder's own that are no part of what it holds); the repo is created (``private`` or
    public) if it does not exist, the branch from ``main`` if it does not. ``private`` with an
    existing public repo is refused: the files would be public.

    Raises:
        ConfigError: not a repo URL, a revision that is not a branch name, a token that may
            not write there.
        BranchMovedError: someone else committed to the branch while publishing.
    """
    if not target.repo_id:
        raise ConfigError(
            "a publish needs one repo",
            subject=target.url,
            fix="name it: hf://datasets/OWNER/NAME",
        )
    repo_id, branch = target.repo_id, target.revision or "main"
    check_revision(branch, subject=target.url)
    if _SHA.match(branch):
        raise ConfigError(
            "a publish goes to a branch, not a commit",
            subject=target.url,
            fix="name a branch (main, or a new one such as curated-v2)",
        )
    files: dict[str, Path | bytes] = {
        **{k: v for k, v in local_files(folder).items() if k not in leave_out},
        **(replace or {}),
    }
    try:
        branches, tags = client.refs(repo_id)
        created = False
    except SourceMissingError:  # no such repo (or one this token may not see: create says)
        client.create_repo(repo_id, private=private)
        branches, tags = client.refs(repo_id)
        created = True
    if private and not created and not client.is_private(repo_id):
        raise ConfigError(
            "the repo exists and is public; --private would not make this publish private",
            subject=target.url,
            fix="make the repo private on the hub first, or publish to a new repo",
        )
    if branch not in branches:
        if branch in tags:
            raise ConfigError(
                f"{branch!r} is a tag of the repo, not a branch",
                subject=target.url,
                fix="publish to a branch; tag the commit afterwards if a tag is wanted",
            )
        client.ensure_branch(repo_id, branch)
    head = branches.get(branch) or client.resolve(repo_id, branch)
    url = HubUrl(target.repo_type, repo_id).url
    plan = _plan(client, repo_id, head, files)
    if not plan.add and not plan.delete:
        log.info("%s@%s already holds these %d files: nothing to commit", url, branch, len(files))
        return Published(f"{url}@{head}", head, created, (), (), plan.unchanged)
    log.info(
        "publishing to %s@%s: %d files to upload (%.1f MB), %d unchanged, %d to delete",
        url,
        branch,
        len(plan.add),
        plan.bytes / 1e6,
        plan.unchanged,
        len(plan.delete),
    )
    try:
        sha = client.commit(
            repo_id,
            branch,
            head,
            add=plan.add,
            delete=plan.delete,
            message=message,
            description=description,
        )
    except BranchMovedError:
        # Our own commit may have landed with its answer lost (the retry then finds a new
        # head): if the branch now holds exactly these files, the publish is done.
        head = client.resolve(repo_id, branch)
        again = _plan(client, repo_id, head, files)
        if again.add or again.delete:
            raise
        log.warning("%s@%s: an earlier try's commit %s landed", url, branch, head)
        sha = head
    log.info("published %s@%s as commit %s", url, branch, sha)
    added, deleted = tuple(sorted(plan.add)), tuple(plan.delete)
    return Published(f"{url}@{sha}", sha, created, added, deleted, plan.unchanged, plan.bytes)
