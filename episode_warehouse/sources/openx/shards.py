"""List and open the tar shards of one OpenX dataset, on the hub or in a local mirror.

Listing reads metadata only (hub LFS hashes; local size and mtime). Reading the members of a
shard is ``members.py``'s job.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    SourceMissingError,
)
from episode_warehouse.gcs import refuse_near_url, url_scheme
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.retry import RetryPolicy, call_with_retries

log = logging.getLogger(__name__)
HF_URL_RE = re.compile(r"^hf://datasets/([^/@]+/[^/@]+)(?:@([^/]+))?/?$")
_HF_FILE_RE = re.compile(r"^hf://datasets/([^/@]+/[^/@]+)@([0-9a-f]{40})/(.+)$")


@dataclass(frozen=True)
class Shard:
    """One tar shard: ``location`` is a local path or an ``hf://`` URL."""

    name: str
    location: str
    size: int
    version: str  # "<size>:<mtime_ns>" for local files, LFS sha256 on the hub

    def to_json(self) -> dict:
        return {"location": self.location, "size": self.size, "version": self.version}


@dataclass(frozen=True)
class ShardListing:
    shards: list[Shard]
    revision: str  # hub commit sha, or "local"


def local_version(path: Path) -> str:
    """A local shard's version from ``stat`` alone (no contents read): size and mtime."""
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def open_shard(location: str, policy: RetryPolicy | None = None):
    """Open a shard for reading (local path or ``hf://datasets/OWNER/REPO@SHA/PATH``, read in
    ranges through huggingface_hub with ``HF_ENDPOINT`` and ``HF_TOKEN`` as set now), retrying
    transient failures."""
    policy = policy or RetryPolicy()
    if url_scheme(location) == "hf":
        from episode_warehouse.hub.client import HubClient

        match = _HF_FILE_RE.match(location)
        if not match:
            raise ConfigError("malformed hub file URL", subject=repr(location))
        repo, sha, path = match.groups()
        return HubClient(policy=policy).stream(repo, sha, path)
    return call_with_retries(lambda: open(location, "rb"), policy=policy, subject=location)


def list_shards(url: str, dataset: str, policy: RetryPolicy | None = None) -> ShardListing:
    """The tar shards of ``dataset`` under ``url`` (``hf://datasets/OWNER/REPO[@rev]`` or a folder).

    Raises:
        ConfigError: a malformed URL.
        SourceUnavailableError: the folder or repo cannot be read, or holds no shard.
    """
    scheme = url_scheme(url)
    if scheme == "hf":
        listing = _list_hub(url, dataset, policy or RetryPolicy())
    elif scheme not in (None, "file"):
        raise ConfigError(
            f"the WebDataset layout is read from the hub or a folder, not from {scheme}://",
            subject=f"OPENX_URL={url}",
            fix="use hf://datasets/OWNER/REPO or a folder (or OPENX_FORMAT=rlds for gs://)",
        )
    else:
        refuse_near_url(url, setting="OPENX_URL")
        listing = _list_local(Path(url.removeprefix("file://")).expanduser(), dataset)
    if not listing.shards:
        raise SourceMissingError(
            f"no tar shards for dataset {dataset!r}",
            subject=url,
            fix=f"check OPENX_URL and the dataset id; expected {dataset}/{dataset}_00000.tar",
        )
    return listing


def _list_local(root: Path, dataset: str) -> ShardListing:
    if not root.is_dir():
        raise SourceMissingError(
            "the OpenX mirror folder does not exist",
            subject=str(root),
            fix="set OPENX_URL to a folder or hf://datasets/OWNER/REPO",
        )
    paths = sorted((root / dataset).glob("*.tar"))
    for p in [root / dataset, *paths]:
        if p.is_symlink():
            raise CorruptInputError(
                f"refused the symbolic link {p} (to {os.readlink(p)}): shards are read from "
                "the mirror folder itself, never through links",
                subject=str(root),
                fix="replace the link by the file or folder itself (cp -rL), or remove it",
            )
    shards = [Shard(p.name, str(p), p.stat().st_size, local_version(p)) for p in paths]
    return ShardListing(shards, "local")


def _list_hub(url: str, dataset: str, policy: RetryPolicy) -> ShardListing:
    match = HF_URL_RE.match(url)
    if not match:
        raise ConfigError(
            "malformed hub URL",
            subject=repr(url),
            fix="write it as hf://datasets/OWNER/REPO, optionally @REVISION",
        )
    repo, revision = match.group(1), match.group(2)
    from episode_warehouse.hub.client import HubClient

    client = HubClient(policy=policy)
    sha = client.resolve(repo, revision)
    files = [f for f in client.files(repo, sha, dataset).values() if f.path.endswith(".tar")]
    shards = [
        Shard(
            checked_segment(f.path.rsplit("/", 1)[-1], subject=url, what="shard name"),
            f"hf://datasets/{repo}@{sha}/{f.path}",
            f.size,
            f.content_id,
        )
        for f in sorted(files, key=lambda f: f.path)
    ]
    return ShardListing(shards, sha)
