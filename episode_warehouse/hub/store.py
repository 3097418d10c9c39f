"""The hub as a blob store for the shared mirror (``sources.mirror``): ``hf://datasets`` (every
dataset repo, a prefix ``OWNER/NAME/...`` names one) or ``hf://datasets/OWNER/NAME[@REV]``.

Each repository's revision is resolved to a commit sha once, the first time the store lists it
(or when :meth:`HubBlobStore.pin` names the revision to read first), and every later call of the
same store reads that commit: a materialization never mixes two commits. A file's
``generation`` is its content id (the LFS sha256, else the git blob id), so a new revision
changes the generation of the files it changed only, and the mirror fetches only those.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import BinaryIO

from episode_warehouse.atomic import link_or_copy
from episode_warehouse.blobs import BlobInfo, ChooseRevision, DownloadStats, file_crc32c
from episode_warehouse.errors import SourceMissingError
from episode_warehouse.guards.names import checked_name
from episode_warehouse.hub.client import HubClient, HubFile
from episode_warehouse.hub.url import HubUrl, check_repo_id, check_revision

log = logging.getLogger(__name__)


class HubBlobStore:
    def __init__(self, url: HubUrl, client: HubClient) -> None:
        self.hub = url
        self.url = HubUrl(url.repo_type, url.repo_id).url  # without the revision
        self.client = client
        self._revisions: dict[str, str] = {}  # repo -> the revision asked for
        self._shas: dict[str, str] = {}  # repo -> the commit it resolved to
        self._files: dict[str, dict[str, HubFile]] = {}
        if url.repo_id and url.revision:
            self._revisions[url.repo_id] = url.revision

    # -- repositories and revisions ------------------------------------------------------------

    def _split(self, name: str) -> tuple[str, str]:
        """(repo id, path in the repo) of a name relative to the store's URL."""
        name = name.strip("/")
        if self.hub.repo_id:
            return self.hub.repo_id, name
        owner, _, rest = name.partition("/")
        repo, _, path = rest.partition("/")
        return check_repo_id(f"{owner}/{repo}", subject=f"{self.url}/{name}"), path

    def _name(self, repo_id: str, path: str) -> str:
        return path if self.hub.repo_id else f"{repo_id}/{path}"

    def pin(self, repo_id: str, revision: str) -> None:
        """Read ``revision`` of ``repo_id`` (before it is first listed)."""
        if repo_id in self._shas and self._revisions.get(repo_id) != revision:
            raise RuntimeError(f"{repo_id} was already read at {self._revisions.get(repo_id)}")
        self._revisions[repo_id] = check_revision(revision, subject=f"{self.url}/{repo_id}")

    def commit(self, repo_id: str) -> str:
        """The commit sha this store reads of ``repo_id`` (resolved on the first call)."""
        if repo_id not in self._shas:
            revision = self._revisions.get(repo_id)
            self._shas[repo_id] = self.client.resolve(repo_id, revision)
            log.info(
                "%s/%s: revision %s is commit %s",
                self.url,
                repo_id,
                revision or "main",
                self._shas[repo_id],
            )
        return self._shas[repo_id]

    def revision(self, repo: str, choose: ChooseRevision | None = None) -> str:
        """The commit this store reads of ``repo``; where the store was asked for no revision of
        it, ``choose(client, repo)`` picks one first (LeRobot's codebase tag)."""
        if choose is not None and repo not in self._revisions:
            self.pin(repo, choose(self.client, repo))
        return self.commit(repo)

    def card_license(self, repo: str, revision: str | None) -> str | None:
        return self.client.card_license(repo, revision or self.commit(repo))

    def repo_files(self, repo_id: str) -> dict[str, HubFile]:
        if repo_id not in self._files:
            self._files[repo_id] = self.client.files(repo_id, self.commit(repo_id))
        return self._files[repo_id]

    # -- the blob store ------------------------------------------------------------------------

    def location(self, prefix: str) -> str:
        repo_id, path = self._split(prefix)
        url = f"{HubUrl(self.hub.repo_type, repo_id).url}@{self.commit(repo_id)}"
        return f"{url}/{path}" if path else url

    def list(self, prefix: str) -> list[BlobInfo]:
        """The files under ``prefix``; nothing for the whole hub, which cannot be listed (its
        datasets are named: ``revision`` of each)."""
        if not prefix.strip("/") and not self.hub.repo_id:
            return []
        repo_id, path = self._split(prefix)
        inside = f"{path.rstrip('/')}/" if path else ""
        out = []
        for name, file in sorted(self.repo_files(repo_id).items()):
            if name.startswith(inside):
                checked_name(name, subject=f"{self.url}/{repo_id}")
                out.append(BlobInfo(self._name(repo_id, name), file.size, "", file.content_id))
        return out

    def _file(self, blob: BlobInfo) -> tuple[str, HubFile]:
        repo_id, path = self._split(blob.name)
        file = self.repo_files(repo_id).get(path)
        if file is None or file.content_id != blob.generation:
            raise SourceMissingError(
                "the file is not in the commit this store reads, or changed",
                subject=f"{self.location(blob.name)}",
                fix="materialize again: the next run lists the current revision",
            )
        return repo_id, file

    def download(
        self,
        blob: BlobInfo,
        dest: Path,
        stats: DownloadStats | None = None,
        part: Path | None = None,
    ) -> str:
        """``blob`` at ``dest``, through huggingface_hub's cache (verified there), linked or
        copied in under a ``.part`` name and renamed; returns its crc32c."""
        repo_id, file = self._file(blob)
        cached = self.client.download(repo_id, self.commit(repo_id), file)
        part = part or dest.with_name(dest.name + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        part.unlink(missing_ok=True)
        link_or_copy(cached.resolve(), part)
        crc = file_crc32c(part)
        os.replace(part, dest)
        if stats is not None:
            stats.downloaded_bytes += file.size
        return crc

    def open(self, blob: BlobInfo) -> BinaryIO:
        """``blob`` at the commit this store reads, from huggingface_hub's cache (downloaded
        and verified first, with the retries of :meth:`HubClient.download`; a later
        :meth:`download` of the same file is then a link from the cache, no second fetch)."""
        repo_id, file = self._file(blob)
        return open(self.client.download(repo_id, self.commit(repo_id), file), "rb")  # noqa: SIM115
