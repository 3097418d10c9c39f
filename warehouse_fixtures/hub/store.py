"""The repositories of the hub stand-in: commits of files, branches and tags, on disk.

A repository is a folder ``<root>/<type>s/<owner>/<name>/`` holding ``objects/<sha256>`` (each
file's bytes, stored once), ``commits/<sha>.json`` (the parent and every file of that commit:
its size, sha256, git blob id and whether it is an LFS file) and ``repo.json`` (branches, tags,
visibility). What the hub's git side would compute is computed the same way here: a file's
``oid`` is the git blob id (``sha1("blob <size>\\0" + bytes)``) of its content, or of its LFS
pointer for LFS files, whose ``lfs.oid`` is the content's sha256.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# the hub's default .gitattributes sends these to LFS (and anything over 10 MB)
LFS_SUFFIXES = (".parquet", ".arrow", ".mp4", ".tar", ".npy", ".safetensors", ".bin", ".zip")
LFS_MIN_BYTES = 10 << 20


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


def is_lfs(path: str, size: int) -> bool:
    return path.endswith(LFS_SUFFIXES) or size >= LFS_MIN_BYTES


@dataclass(frozen=True)
class Entry:
    """One file of a commit."""

    path: str
    size: int
    sha256: str
    lfs: bool

    def to_json(self) -> dict:
        return {"size": self.size, "sha256": self.sha256, "lfs": self.lfs}


class HubError(Exception):
    """An answer of the stand-in other than 2xx: its status, the hub's ``X-Error-Code``, text."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class RepoNotFound(LookupError):
    pass


class RevisionNotFound(LookupError):
    pass


class HubStore:
    """Repositories on disk; thread-safe (one lock: commits are rare, reads do not take it)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    # -- repositories --------------------------------------------------------------------------

    def folder(self, repo_type: str, repo_id: str) -> Path:
        owner, _, name = repo_id.partition("/")
        if not owner or not name or "/" in name or ".." in repo_id:
            raise RepoNotFound(repo_id)
        return self.root / f"{repo_type}s" / owner / name

    def exists(self, repo_type: str, repo_id: str) -> bool:
        return (self.folder(repo_type, repo_id) / "repo.json").is_file()

    def settings(self, repo_type: str, repo_id: str) -> dict:
        path = self.folder(repo_type, repo_id) / "repo.json"
        if not path.is_file():
            raise RepoNotFound(repo_id)
        return json.loads(path.read_text())

    def _save_settings(self, repo_type: str, repo_id: str, settings: dict) -> None:
        path = self.folder(repo_type, repo_id) / "repo.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(settings, indent=1))
        tmp.replace(path)

    def create_repo(
        self,
        repo_id: str,
        *,
        repo_type: str = "dataset",
        private: bool = False,
        gated: bool = False,
    ) -> None:
        """An empty repository whose ``main`` has one commit (the hub adds .gitattributes)."""
        with self._lock:
            folder = self.folder(repo_type, repo_id)
            if (folder / "repo.json").is_file():
                raise FileExistsError(repo_id)
            (folder / "objects").mkdir(parents=True, exist_ok=True)
            (folder / "commits").mkdir(exist_ok=True)
            settings = {"private": private, "gated": gated, "branches": {}, "tags": {}}
            self._save_settings(repo_type, repo_id, settings)
        self.commit(
            repo_id,
            {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"},
            repo_type=repo_type,
            message="initial commit",
        )

    # -- commits -------------------------------------------------------------------------------

    def put_object(self, repo_type: str, repo_id: str, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.folder(repo_type, repo_id) / "objects" / sha
        if not path.is_file():
            tmp = path.with_name(f"{sha}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return sha

    def has_object(self, repo_type: str, repo_id: str, sha256: str) -> bool:
        return (self.folder(repo_type, repo_id) / "objects" / sha256).is_file()

    def commit(
        self,
        repo_id: str,
        files: Mapping[str, bytes | Path],
        *,
        repo_type: str = "dataset",
        delete: tuple[str, ...] = (),
        branch: str = "main",
        message: str = "update",
        tag: str | None = None,
        lfs_objects: dict[str, tuple[str, int]] | None = None,
        parent: str | None = None,
    ) -> str:
        """A new commit on ``branch`` with ``files`` added or replaced and ``delete`` removed
        (a folder path deletes what is under it); ``lfs_objects`` adds files whose bytes were
        uploaded before (path -> (sha256, size)). Returns the commit sha.

        Raises:
            RevisionNotFound: ``parent`` is given and is not the branch's head (a stale commit).
        """
        entries: dict[str, dict] = {}
        for path, content in files.items():
            data = content.read_bytes() if isinstance(content, Path) else content
            sha = self.put_object(repo_type, repo_id, data)
            entries[path] = Entry(path, len(data), sha, is_lfs(path, len(data))).to_json()
        for path, (sha, size) in (lfs_objects or {}).items():
            if not self.has_object(repo_type, repo_id, sha):
                raise FileNotFoundError(f"LFS object {sha} of {path} was never uploaded")
            entries[path] = Entry(path, size, sha, True).to_json()
        with self._lock:
            settings = self.settings(repo_type, repo_id)
            head = settings["branches"].get(branch)
            if parent is not None and head is not None and parent != head:
                raise RevisionNotFound(f"{parent} is not the head of {branch}")
            tree = dict(self.tree(repo_type, repo_id, head)) if head else {}
            for gone in delete:
                prefix = gone.rstrip("/") + "/"
                for path in [p for p in tree if p == gone or p.startswith(prefix)]:
                    del tree[path]
            tree.update(entries)
            record = {
                "parent": head,
                "files": tree,
                "message": message,
                "date": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            }
            text = json.dumps(record, sort_keys=True)
            sha = hashlib.sha1(f"{repo_id}\n{text}".encode()).hexdigest()
            folder = self.folder(repo_type, repo_id)
            (folder / "commits" / f"{sha}.json").write_text(text)
            settings["branches"][branch] = sha
            if tag:
                settings["tags"][tag] = sha
            self._save_settings(repo_type, repo_id, settings)
        return sha

    def commit_folder(self, repo_id: str, folder: Path, **kw) -> str:
        """A commit holding every file under ``folder`` (by its path inside it)."""
        files = {
            str(f.relative_to(folder)): f for f in sorted(Path(folder).rglob("*")) if f.is_file()
        }
        return self.commit(repo_id, files, **kw)

    def tag(self, repo_id: str, tag: str, revision: str = "main", *, repo_type="dataset") -> str:
        with self._lock:
            settings = self.settings(repo_type, repo_id)
            sha = self.resolve(repo_type, repo_id, revision)
            settings["tags"][tag] = sha
            self._save_settings(repo_type, repo_id, settings)
        return sha

    def delete_tag(self, repo_id: str, tag: str, *, repo_type="dataset") -> None:
        with self._lock:
            settings = self.settings(repo_type, repo_id)
            if tag not in settings["tags"]:
                raise RevisionNotFound(tag)
            del settings["tags"][tag]
            self._save_settings(repo_type, repo_id, settings)

    def create_branch(
        self, repo_id: str, branch: str, revision: str = "main", *, repo_type="dataset"
    ) -> None:
        with self._lock:
            settings = self.settings(repo_type, repo_id)
            if branch in settings["branches"]:
                raise FileExistsError(branch)
            settings["branches"][branch] = self.resolve(repo_type, repo_id, revision)
            self._save_settings(repo_type, repo_id, settings)

    # -- reads ---------------------------------------------------------------------------------

    def resolve(self, repo_type: str, repo_id: str, revision: str | None) -> str:
        """The commit sha of a branch, a tag, or a commit sha."""
        settings = self.settings(repo_type, repo_id)
        revision = revision or "main"
        for prefix in ("refs/heads/", "refs/tags/"):
            revision = revision.removeprefix(prefix)
        if revision in settings["branches"]:
            return settings["branches"][revision]
        if revision in settings["tags"]:
            return settings["tags"][revision]
        if (
            len(revision) == 40
            and (self.folder(repo_type, repo_id) / "commits" / f"{revision}.json").is_file()
        ):
            return revision
        raise RevisionNotFound(revision)

    def commit_record(self, repo_type: str, repo_id: str, sha: str) -> dict:
        return json.loads((self.folder(repo_type, repo_id) / "commits" / f"{sha}.json").read_text())

    def tree(self, repo_type: str, repo_id: str, sha: str) -> dict[str, dict]:
        """path -> {size, sha256, lfs} of every file of commit ``sha``."""
        return self.commit_record(repo_type, repo_id, sha)["files"]

    def object_path(self, repo_type: str, repo_id: str, sha256: str) -> Path:
        return self.folder(repo_type, repo_id) / "objects" / sha256

    def oid(self, repo_type: str, repo_id: str, entry: dict) -> str:
        """The git blob id of a file: of its LFS pointer, or of its bytes."""
        if entry["lfs"]:
            return git_blob_id(lfs_pointer(entry["sha256"], entry["size"]))
        return git_blob_id(self.object_path(repo_type, repo_id, entry["sha256"]).read_bytes())
