"""The upload side of the hub stand-in: the requests huggingface_hub's ``create_repo``,
``create_branch`` and ``create_commit`` make (LFS protocol; Xet is not spoken here).

- ``POST /api/repos/create``: a new repository (409 if it exists);
- ``POST /api/{type}s/{repo}/branch/{branch}``: a branch (409 if it exists);
- ``POST /api/{type}s/{repo}/tag/{revision}`` and ``DELETE .../tag/{tag}``: tags;
- ``POST /api/validate-yaml``: the dataset card's YAML header is parsed, 400 if it is not YAML;
- ``POST /api/{type}s/{repo}/preupload/{rev}``: per file, ``uploadMode`` (``lfs`` or
  ``regular``) and, for a file already at that revision, its ``oid`` (the sha256 of an LFS file,
  the git blob id of any other), so unchanged files are not sent again;
- ``POST /[{type}s/]{repo}.git/info/lfs/objects/batch``: for each object not stored yet, a
  one-use upload URL (no ``actions`` for an object the store has: the client skips it);
- ``PUT /lfs-upload/{ticket}``: the object's bytes, checked against its sha256 and size;
- ``POST /api/{type}s/{repo}/commit/{rev}``: the ndjson commit (``header``, ``file``,
  ``lfsFile``, ``deletedFile``, ``deletedFolder``); a ``parentCommit`` that is no longer the
  branch's head is refused with 412, as the hub does.

Every request that writes needs a token of ``tokens``. A commit either lands whole or not at
all (one store commit), so a client killed before it leaves the repository as it was.
``pause_uploads_after``, when set, makes every LFS upload that arrives after that many wait
until ``release`` is called (a test kills the client there).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from urllib.parse import unquote

import yaml

from warehouse_fixtures.hub.store import (
    HubError,
    HubStore,
    RepoNotFound,
    RevisionNotFound,
    is_lfs,
)


class Uploads:
    """Routes of the upload side over ``store``; ``url`` is the stand-in's base URL."""

    def __init__(self, store: HubStore, url: str, authorized) -> None:
        self.store = store
        self.url = url
        self._authorized = authorized
        self._tickets: dict[str, tuple[str, str, str, int]] = {}
        self._lock = threading.Lock()
        self.uploaded: list[str] = []  # sha256 of every object PUT, in order
        self.pause_uploads_after: int | None = None
        self._started = 0
        self._gate = threading.Event()

    def release(self) -> None:
        self._gate.set()

    def _writer(self, headers: dict, what: str) -> None:
        if not self._authorized(headers):
            raise HubError(
                401, "Unauthorized", f"Invalid credentials in Authorization header ({what})"
            )

    # -- routes outside /api/{type}s/{repo} ----------------------------------------------------

    def route(self, method: str, parts: list[str], headers: dict, body: bytes):
        if method == "POST" and parts[:3] == ["api", "repos", "create"]:
            return self._create_repo(headers, json.loads(body or b"{}"))
        if method == "POST" and parts[:2] == ["api", "validate-yaml"]:
            return self._validate_yaml(json.loads(body or b"{}"))
        if method == "PUT" and len(parts) == 2 and parts[0] == "lfs-upload":
            return self._put(parts[1], body)
        repo_type = "model"
        if parts[0] in ("datasets", "spaces"):
            repo_type, parts = parts[0][:-1], parts[1:]
        if (
            method == "POST"
            and len(parts) == 6
            and parts[1].endswith(".git")
            and parts[2:] == ["info", "lfs", "objects", "batch"]
        ):
            repo_id = f"{unquote(parts[0])}/{unquote(parts[1])[: -len('.git')]}"
            return self._batch(repo_type, repo_id, headers, json.loads(body or b"{}"))
        raise HubError(404, "NotFound", f"no route for {method} /{'/'.join(parts)}")

    def _create_repo(self, headers: dict, payload: dict):
        self._writer(headers, "create repo")
        name, owner = payload.get("name") or "", payload.get("organization")
        if owner is None and "/" in name:
            owner, name = name.split("/", 1)
        repo_type = payload.get("type") or "model"
        repo_id = f"{owner}/{name}"
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        try:
            self.store.create_repo(repo_id, repo_type=repo_type, private=private)
        except FileExistsError:
            raise HubError(
                409, "RepoExists", f"You already created this {repo_type} repo"
            ) from None
        except RepoNotFound:
            raise HubError(400, "BadRequest", f"invalid repo name {repo_id!r}") from None
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        return _json({"url": f"{self.url}/{prefix}{repo_id}", "name": repo_id})

    @staticmethod
    def _validate_yaml(payload: dict):
        content = payload.get("content") or ""
        if content.startswith("---"):
            header = content[3:].split("\n---", 1)[0]
            try:
                meta = yaml.safe_load(header)
            except yaml.YAMLError as exc:
                return _json({"errors": [{"message": str(exc)}]}, status=400)
            if meta is not None and not isinstance(meta, dict):
                return _json({"errors": [{"message": "metadata is not a mapping"}]}, status=400)
        return _json({"errors": [], "warnings": []})

    # -- routes of /api/{type}s/{repo}/... ---------------------------------------------------

    def api(self, method, repo_type, repo_id, rest, headers, body):
        if method == "POST" and len(rest) == 2 and rest[0] == "branch":
            return self._branch(repo_type, repo_id, unquote(rest[1]), headers, body)
        if len(rest) == 2 and rest[0] == "tag" and method in ("POST", "DELETE"):
            return self._tag(method, repo_type, repo_id, unquote(rest[1]), headers, body)
        if method == "POST" and len(rest) == 2 and rest[0] == "preupload":
            return self._preupload(repo_type, repo_id, unquote(rest[1]), headers, body)
        if method == "POST" and len(rest) == 2 and rest[0] == "commit":
            return self._commit(repo_type, repo_id, unquote(rest[1]), headers, body)
        raise HubError(404, "NotFound", f"no route for {method} {'/'.join(rest)}")

    def _branch(self, repo_type, repo_id, branch, headers, body):
        self._writer(headers, "create branch")
        start = json.loads(body or b"{}").get("startingPoint") or "main"
        try:
            self.store.create_branch(repo_id, branch, start, repo_type=repo_type)
        except FileExistsError:
            raise HubError(409, "BranchExists", f"branch {branch} already exists") from None
        except RevisionNotFound:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {start}") from None
        return _json({})

    def _tag(self, method, repo_type, repo_id, name, headers, body):
        """POST ``tag/{revision}`` {"tag": ...} creates a tag (409 if it exists); DELETE
        ``tag/{tag}`` removes one."""
        self._writer(headers, "tag")
        if method == "DELETE":
            try:
                self.store.delete_tag(repo_id, name, repo_type=repo_type)
            except RevisionNotFound:
                raise HubError(404, "RevisionNotFound", f"Invalid rev id: {name}") from None
            return _json({})
        tag = json.loads(body or b"{}").get("tag") or ""
        if tag in self.store.settings(repo_type, repo_id)["tags"]:
            raise HubError(409, "TagExists", f"tag {tag} already exists")
        self.store.tag(repo_id, tag, self._head(repo_type, repo_id, name), repo_type=repo_type)
        return _json({})

    def _head(self, repo_type, repo_id, revision) -> str:
        try:
            return self.store.resolve(repo_type, repo_id, revision)
        except RevisionNotFound:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}") from None

    def _preupload(self, repo_type, repo_id, revision, headers, body):
        self._writer(headers, "preupload")
        sha = self._head(repo_type, repo_id, revision)
        tree = self.store.tree(repo_type, repo_id, sha)
        out = []
        for file in json.loads(body or b"{}").get("files", []):
            path, size = file["path"], int(file["size"])
            sample = base64.b64decode(file.get("sample") or "")
            lfs = is_lfs(path, size) or b"\0" in sample
            entry = {"path": path, "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            if path in tree:
                old = tree[path]
                entry["oid"] = (
                    old["sha256"] if old["lfs"] else self.store.oid(repo_type, repo_id, old)
                )
            out.append(entry)
        return _json({"files": out, "commitOid": sha})

    def _batch(self, repo_type, repo_id, headers, payload):
        self._writer(headers, "LFS batch")
        try:
            self.store.settings(repo_type, repo_id)
        except RepoNotFound:
            raise HubError(404, "RepoNotFound", f"Repository Not Found for {repo_id}") from None
        objects = []
        for obj in payload.get("objects", []):
            oid, size = str(obj["oid"]), int(obj["size"])
            answer: dict = {"oid": oid, "size": size, "authenticated": True}
            if not self.store.has_object(repo_type, repo_id, oid):
                ticket = secrets.token_urlsafe(16)
                with self._lock:
                    self._tickets[ticket] = (repo_type, repo_id, oid, size)
                answer["actions"] = {"upload": {"href": f"{self.url}/lfs-upload/{ticket}"}}
            objects.append(answer)
        return _json({"transfer": "basic", "objects": objects})

    def _put(self, ticket: str, body: bytes):
        with self._lock:
            found = self._tickets.pop(ticket, None)
            self._started += 1  # by arrival: uploads run in parallel
            paused = (
                self.pause_uploads_after is not None and self._started > self.pause_uploads_after
            )
        if found is None:
            raise HubError(403, "Forbidden", "unknown or used upload URL")
        if paused:
            self._gate.wait()
        repo_type, repo_id, oid, size = found
        if len(body) != size or hashlib.sha256(body).hexdigest() != oid:
            raise HubError(
                400, "BadRequest", f"the upload of {oid} does not match its oid and size"
            )
        self.store.put_object(repo_type, repo_id, body)
        with self._lock:
            self.uploaded.append(oid)
        return 200, {"ETag": f'"{oid}"'}, b""

    def _commit(self, repo_type, repo_id, revision, headers, body):
        self._writer(headers, "commit")
        head = self._head(repo_type, repo_id, revision)
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header: dict = next((i["value"] for i in lines if i["key"] == "header"), {})
        parent = header.get("parentCommit")
        if parent and parent != head:
            raise HubError(412, "PreconditionFailed", "A commit has happened since. Please refresh")
        files: dict[str, bytes] = {}
        lfs: dict[str, tuple[str, int]] = {}
        delete: list[str] = []
        for item in lines:
            key, value = item["key"], item["value"]
            if key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile":
                size = value.get("size")
                if size is None:
                    size = self.store.object_path(repo_type, repo_id, value["oid"]).stat().st_size
                lfs[value["path"]] = (value["oid"], int(size))
            elif key in ("deletedFile", "deletedFolder"):
                delete.append(value["path"])
        try:
            sha = self.store.commit(
                repo_id,
                files,
                repo_type=repo_type,
                delete=tuple(delete),
                branch=revision,
                message=header.get("summary") or "",
                lfs_objects=lfs,
                parent=head,
            )
        except FileNotFoundError as exc:
            raise HubError(400, "BadRequest", str(exc)) from None
        except RevisionNotFound:
            raise HubError(412, "PreconditionFailed", "A commit has happened since") from None
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        return _json(
            {
                "success": True,
                "commitOid": sha,
                "commitUrl": f"{self.url}/{prefix}{repo_id}/commit/{sha}",
            }
        )


def _json(obj, status: int = 200):
    return status, {"Content-Type": "application/json"}, json.dumps(obj).encode()
