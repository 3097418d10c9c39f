"""The calls the warehouse makes to the Hugging Face Hub, through huggingface_hub, with this
package's errors and retries.

Settings are huggingface_hub's own, read when a client is made (not when huggingface_hub was
imported): ``HF_ENDPOINT`` (default https://huggingface.co), ``HF_TOKEN`` or the token
``hf auth login`` saved, ``HF_HUB_CACHE``/``HF_HOME`` for the cache, ``HF_HUB_OFFLINE``. Files are
downloaded into huggingface_hub's cache with ``hf_hub_download`` (resumable, shared with every
other tool on the machine that reads the hub) and then verified here: the size, and the content
against the hub's listing (the sha256 of an LFS file, the git blob id of any other). The token
is never logged and never part of an error.

huggingface_hub builds cache paths from the server's answers: a blob is named after the
``ETag`` (``blobs/<etag>``), a snapshot after ``X-Repo-Commit``. A hostile endpoint answering
``ETag: "../../../x"`` made it write (and, on a bad download, delete) outside the cache. So every
answer passes :func:`check_hub_answer` before huggingface_hub sees it (a response hook on the
HTTP client it uses, installed once per process), and every path it hands back is checked to
resolve inside the cache (``guards.names.returned_path``) before it is read or deleted.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    ExportError,
    SourceMissingError,
    SourceUnreachableError,
)
from episode_warehouse.guards.names import returned_path
from episode_warehouse.hub.url import check_revision
from episode_warehouse.retry import RetryPolicy, call_with_retries
from episode_warehouse.settings import Settings

log = logging.getLogger(__name__)
_LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")  # the hub's license ids
_TOKEN_FIX = (
    "if the repo is private or gated, accept its terms on the hub and set HF_TOKEN (or run "
    "hf auth login); else check the repo id"
)


# what an ETag or commit header may be to name a cache file: one plain segment
_CACHE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+=-]{0,254}")
_NAMING_HEADERS = ("etag", "x-linked-etag", "x-repo-commit", "x-xet-hash")


def check_hub_answer(response) -> None:
    """Refuse an answer whose headers huggingface_hub would turn into a path outside its cache.

    Raises:
        CorruptInputError: naming the header, its value and the URL.
    """
    for name in _NAMING_HEADERS:
        value = response.headers.get(name)
        if value is None:
            continue
        token = value.removeprefix("W/").strip('"')
        if not _CACHE_TOKEN.fullmatch(token) or ".." in token:
            raise CorruptInputError(
                f"the hub answered {name}: {value[:80]!r}, which would name a file outside "
                "huggingface_hub's cache",
                subject=str(response.request.url),
                fix="nothing was written; check HF_ENDPOINT (a hub, or a mirror you trust)",
            )


@functools.cache
def guard_hub_answers() -> None:
    """Install :func:`check_hub_answer` on the HTTP client huggingface_hub uses (once)."""
    import httpx
    from huggingface_hub.utils import _http

    def factory() -> httpx.Client:
        client = _http.default_client_factory()
        client.event_hooks["response"] = [*client.event_hooks["response"], check_hub_answer]
        return client

    _http.set_client_factory(factory)


class BranchMovedError(ExportError):
    """A commit's parent is no longer its branch's head: someone committed meanwhile."""


@dataclass(frozen=True)
class HubFile:
    """One file of a commit as the hub lists it."""

    path: str
    size: int
    blob_id: str  # git blob id (of the LFS pointer for an LFS file)
    sha256: str | None  # LFS files: the content's sha256

    @property
    def content_id(self) -> str:
        """What changes when the file's bytes change: the LFS sha256, else the git blob id."""
        return self.sha256 or self.blob_id


def git_blob_id(path: Path) -> str:
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


class HubClient:
    """One endpoint and token; every call bounded by ``policy`` and retried when transient."""

    def __init__(
        self,
        *,
        repo_type: str = "dataset",
        endpoint: str | None = None,
        token: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        from huggingface_hub import HfApi

        guard_hub_answers()
        self.repo_type = repo_type
        settings = Settings.from_env(hub_endpoint=endpoint)
        self.endpoint = settings.hub_endpoint
        self.token = token or None  # None: huggingface_hub finds HF_TOKEN or the saved login
        self.policy = policy or RetryPolicy()
        self.cache_dir = settings.hub_cache
        self.api = HfApi(endpoint=self.endpoint, token=self.token)

    def _call(self, fn, *, repo_id: str, revision: str | None = None, path: str | None = None):
        subject = f"hf://{self.repo_type}s/{repo_id}" + (f"@{revision}" if revision else "")
        if path:
            subject += f"/{path}"

        def translated():
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - hub errors become ours, others classified
                ours = _translate(exc, subject, revision)
                if ours is exc:
                    raise
                raise ours from exc

        return call_with_retries(translated, policy=self.policy, subject=subject)

    def resolve(self, repo_id: str, revision: str | None) -> str:
        """The commit sha a branch, tag or sha names (once per materialization).

        Raises:
            SourceMissingError: no such repo, or private or gated without a token that may read it.
            ConfigError: no such revision.
        """
        if revision:
            check_revision(revision, subject=f"hf://{self.repo_type}s/{repo_id}@{revision}")

        def info():
            found = self.api.repo_info(
                repo_id, repo_type=self.repo_type, revision=revision, timeout=self.policy.timeout_s
            )
            return str(found.sha or "")

        sha = self._call(info, repo_id=repo_id, revision=revision)
        check_revision(sha, subject=f"hf://{self.repo_type}s/{repo_id} (the sha the hub sent)")
        return sha

    def card_license(self, repo_id: str, sha: str) -> str | None:
        """The ``license`` of the repo's card (README.md's YAML header) at commit ``sha``, if
        it names one license as the hub spells them (``cc-by-4.0``); else None."""

        def info():
            return self.api.repo_info(repo_id, repo_type=self.repo_type, revision=sha)

        card = getattr(self._call(info, repo_id=repo_id, revision=sha), "card_data", None)
        value = getattr(card, "license", None) if card is not None else None
        if isinstance(value, str) and _LICENSE.match(value):
            return value
        if value is not None:
            log.warning(
                "hf://%ss/%s: the card's license %r is not one id", self.repo_type, repo_id, value
            )
        return None

    def refs(self, repo_id: str) -> tuple[dict[str, str], dict[str, str]]:
        """(branch name -> commit sha, tag name -> commit sha)."""
        refs = self._call(
            lambda: self.api.list_repo_refs(repo_id, repo_type=self.repo_type), repo_id=repo_id
        )
        return (
            {b.name: b.target_commit for b in refs.branches},
            {t.name: t.target_commit for t in refs.tags},
        )

    def tags(self, repo_id: str) -> dict[str, str]:
        """Tag name -> commit sha."""
        return self.refs(repo_id)[1]

    def files(self, repo_id: str, sha: str, folder: str | None = None) -> dict[str, HubFile]:
        """Every file of commit ``sha`` (under ``folder``), by path."""
        from huggingface_hub.hf_api import RepoFile

        def listing() -> dict[str, HubFile]:
            tree = self.api.list_repo_tree(
                repo_id, path_in_repo=folder, recursive=True, revision=sha, repo_type=self.repo_type
            )
            return {
                f.path: HubFile(f.path, int(f.size), f.blob_id, f.lfs.sha256 if f.lfs else None)
                for f in tree
                if isinstance(f, RepoFile)
            }

        return self._call(listing, repo_id=repo_id, revision=sha, path=folder)

    def download(self, repo_id: str, sha: str, file: HubFile) -> Path:
        """``file`` of commit ``sha`` in huggingface_hub's cache, verified against the listing.

        Raises:
            SourceUnreachableError: the download kept failing, or kept arriving with other bytes
                than the hub lists (a corrupt copy is deleted from the cache before each retry).
        """
        from huggingface_hub import hf_hub_download

        def fetch() -> Path:
            path = returned_path(
                hf_hub_download(
                    repo_id,
                    file.path,
                    repo_type=self.repo_type,
                    revision=sha,
                    endpoint=self.endpoint,
                    token=self.token,
                    cache_dir=self.cache_dir,
                    etag_timeout=self.policy.timeout_s,
                ),
                self._cache_root(),
                subject=f"hf://{self.repo_type}s/{repo_id}/{file.path}",
                what="cached file",
            )
            self._verify(path, repo_id, file)
            return path

        return self._call(fetch, repo_id=repo_id, revision=sha, path=file.path)

    def stream(self, repo_id: str, sha: str, path: str):
        """A ranged, streaming reader of ``path`` at commit ``sha`` (no copy in the cache)."""
        from huggingface_hub import HfFileSystem

        fs = HfFileSystem(endpoint=self.endpoint, token=self.token)
        kind = f"{self.repo_type}s/" if self.repo_type != "model" else ""
        return self._call(
            lambda: fs.open(f"{kind}{repo_id}@{sha}/{path}", "rb", block_size=8 << 20),
            repo_id=repo_id,
            revision=sha,
            path=path,
        )

    # -- writing -------------------------------------------------------------------------------

    def create_repo(self, repo_id: str, *, private: bool) -> None:
        """A new repo (an existing one is left as it is).

        Raises:
            ConfigError: the token may not create repos there.
        """
        self._write(
            lambda: self.api.create_repo(
                repo_id, repo_type=self.repo_type, private=private, exist_ok=True
            ),
            repo_id=repo_id,
        )

    def is_private(self, repo_id: str) -> bool:
        info = self._call(
            lambda: self.api.repo_info(repo_id, repo_type=self.repo_type), repo_id=repo_id
        )
        return bool(info.private)

    def ensure_branch(self, repo_id: str, branch: str) -> None:
        """Create ``branch`` (from ``main``) unless it exists."""
        self._write(
            lambda: self.api.create_branch(
                repo_id, branch=branch, repo_type=self.repo_type, exist_ok=True
            ),
            repo_id=repo_id,
            revision=branch,
        )

    def move_tag(self, repo_id: str, tag: str, sha: str) -> None:
        """Point ``tag`` at commit ``sha``. The hub has no move and refuses a second tag of one
        name, so an existing tag is deleted, then created (as lerobot's ``push_to_hub`` does with
        its codebase-version tag); each call retried when transient.

        Raises:
            ExportError: the tag was deleted and could not be created again: the repo has no
                such tag until a rerun (which creates it; nothing else is uploaded again).
        """
        from huggingface_hub.errors import RevisionNotFoundError

        def delete() -> bool:
            try:
                self.api.delete_tag(repo_id, tag=tag, repo_type=self.repo_type)
            except RevisionNotFoundError:
                return False  # no such tag yet (or an earlier try deleted it)
            return True

        deleted = self._write(delete, repo_id=repo_id, revision=tag)
        try:
            self._write(
                lambda: self.api.create_tag(
                    repo_id, tag=tag, revision=sha, repo_type=self.repo_type
                ),
                repo_id=repo_id,
                revision=tag,
            )
        except Exception as exc:  # noqa: BLE001 - any failure leaves the repo without the tag
            if not deleted:
                raise
            raise ExportError(
                f"the {tag} tag was deleted to be moved to {sha[:12]} and could not be created "
                f"again ({str(exc).splitlines()[0][:200]}): the repo has no {tag} tag now, so "
                "LeRobotDataset cannot open it",
                subject=f"hf://{self.repo_type}s/{repo_id}",
                fix="run the same publish again: it finds the files in place and creates the tag",
            ) from exc

    def commit(
        self,
        repo_id: str,
        branch: str,
        parent: str,
        *,
        add: dict[str, Path | bytes],
        delete: list[str],
        message: str,
        description: str = "",
    ) -> str:
        """One commit on ``branch`` whose parent must still be ``parent`` (no one committed
        since); returns its sha. LFS objects the hub already has are not sent again.

        Raises:
            BranchMovedError: the branch moved since ``parent`` was read.
            ConfigError: the token may not write the repo.
        """
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        def commit() -> str:
            operations = [
                CommitOperationAdd(
                    path_in_repo=p, path_or_fileobj=c if isinstance(c, bytes) else str(c)
                )
                for p, c in sorted(add.items())
            ] + [CommitOperationDelete(path_in_repo=p) for p in sorted(delete)]
            done = self.api.create_commit(
                repo_id,
                operations,
                commit_message=message,
                commit_description=description,
                repo_type=self.repo_type,
                revision=branch,
                parent_commit=parent,
            )
            return str(done.oid)

        sha = self._write(commit, repo_id=repo_id, revision=branch)
        check_revision(sha, subject=f"hf://{self.repo_type}s/{repo_id} (the sha the hub sent)")
        return sha

    def _write(self, fn, *, repo_id: str, revision: str | None = None):
        """``fn`` with the write side's errors: 401/403 name the token, 412 a moved branch."""
        subject = f"hf://{self.repo_type}s/{repo_id}" + (f"@{revision}" if revision else "")

        def guarded():
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - write refusals named, the rest as reads
                status = getattr(getattr(exc, "response", None), "status_code", None)
                if status in (401, 403):
                    raise ConfigError(
                        "the hub refused the write: no token, or one without write access here",
                        subject=subject,
                        fix="set HF_TOKEN to a token with write access to this repo (or run "
                        "hf auth login); for an organisation's repo, ask for its write role",
                    ) from exc
                if status == 412:
                    raise BranchMovedError(
                        "the branch moved while publishing: someone else committed to it",
                        subject=subject,
                        fix="check who else publishes there, then run the publish again",
                    ) from exc
                raise

        return self._call(guarded, repo_id=repo_id, revision=revision)

    def _cache_root(self) -> Path:
        """huggingface_hub's cache folder as it resolves it now."""
        if self.cache_dir:
            return Path(self.cache_dir)
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)

    def _verify(self, path: Path, repo_id: str, file: HubFile) -> None:
        size = path.stat().st_size
        got = (file_sha256 if file.sha256 else git_blob_id)(path) if size == file.size else ""
        if size == file.size and got == file.content_id:
            return
        # the cache's blob behind the snapshot link: drop it, fetch again (only inside the cache)
        blob = returned_path(
            path.resolve(),
            self._cache_root(),
            subject=f"hf://{self.repo_type}s/{repo_id}/{file.path}",
            what="cached blob",
        )
        path.unlink(missing_ok=True)
        if blob != path:
            blob.unlink(missing_ok=True)
        raise SourceUnreachableError(
            f"the download of {file.path} has {size} bytes and id {got or '?'}; the hub lists "
            f"{file.size} bytes and {file.content_id}",
            subject=f"hf://{self.repo_type}s/{repo_id}/{file.path}",
            fix="retried; if it persists, the cache or the network alters files: clear the "
            "huggingface_hub cache of this repo",
        )


def _translate(exc: Exception, subject: str, revision: str | None) -> Exception:
    """huggingface_hub's errors as this package's (others are left to ``classify``)."""
    from huggingface_hub.errors import (
        DisabledRepoError,
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return SourceMissingError(
            "the repo is gated: its terms must be accepted and a token given",
            subject=subject,
            fix="accept the terms on the repo's page, then set HF_TOKEN (or run hf auth login)",
        )
    if isinstance(exc, RepositoryNotFoundError | DisabledRepoError):
        return SourceMissingError(
            "no such repo on the hub, or it is private", subject=subject, fix=_TOKEN_FIX
        )
    if isinstance(exc, RevisionNotFoundError):
        return ConfigError(
            f"the repo has no revision {revision!r}",
            subject=subject,
            fix="name an existing branch, tag or commit sha (see the repo's refs on the hub)",
        )
    if isinstance(exc, LocalEntryNotFoundError):  # the hub did not answer (not: no such file)
        return SourceUnreachableError(
            f"the hub did not answer ({str(exc).splitlines()[0][:200]})",
            subject=subject,
            fix="retried; check the network and HF_ENDPOINT",
        )
    if isinstance(exc, EntryNotFoundError):
        return SourceMissingError(
            "the file is not in that revision", subject=subject, fix="check the path and revision"
        )
    return exc
