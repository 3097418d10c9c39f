"""A local stand-in for the Hugging Face Hub's HTTP API, for loopback tests (read side).

It answers the requests ``huggingface_hub`` makes (checked against its own ``snapshot_download``,
``HfFileSystem`` and lerobot's ``LeRobotDataset`` in the tests), over repositories kept by
:class:`~warehouse_fixtures.hub.store.HubStore`:

- ``GET /api/{type}s/{repo}[/revision/{rev}]``: repo info (``sha``, ``siblings``, ...);
- ``GET /api/{type}s/{repo}/refs``: branches and tags with their commits;
- ``GET /api/{type}s/{repo}/tree/{rev}[/{path}]``: the listing (``recursive``, paginated with a
  ``Link: <...>; rel="next"`` header as the hub does);
- ``POST /api/{type}s/{repo}/paths-info/{rev}``: entries of named paths;
- ``HEAD``/``GET /[{type}s/]{repo}/resolve/{rev}/{path}``: a file, with ``X-Repo-Commit``,
  ``ETag`` (the git blob id, or the sha256 of an LFS file), ``X-Linked-Size`` and
  ``X-Linked-Etag`` for LFS files, and byte ranges (206).

Errors carry the hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``,
``EntryNotFound``, ``GatedRepo``), which huggingface_hub turns into its own exceptions. A private
or gated repository needs ``Authorization: Bearer <token>`` with one of ``tokens``, and so does
every write. The upload side (create, preupload, LFS batch and upload, commit) is
:mod:`warehouse_fixtures.hub.upload`.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

import yaml

from warehouse_fixtures.hub.store import (
    HubError,
    HubStore,
    RepoNotFound,
    RevisionNotFound,
    lfs_pointer,
)
from warehouse_fixtures.hub.upload import Uploads

log = logging.getLogger(__name__)
TYPES = ("dataset", "model", "space")
PAGE = 1000  # tree entries per page, as the hub


class HubServer:
    """Serve ``store`` on 127.0.0.1 in a thread; ``url`` is what ``HF_ENDPOINT`` is set to.

    ``requests`` counts what was asked (method and path), so a test can tell which files a
    reader fetched. ``file_headers`` are sent with every file answer over the real ones: a
    hostile hub (an ``ETag`` of ``../../x``) in a test.
    """

    def __init__(self, store: HubStore, *, tokens: tuple[str, ...] = (), page: int = PAGE) -> None:
        self.store = store
        self.tokens = set(tokens)
        self.page = page
        self.requests: list[tuple[str, str]] = []
        self.file_headers: dict[str, str] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms stall

            def log_message(self, *args):  # quiet
                pass

            def _serve(self) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path))
                body = self._body()
                try:
                    status, headers, payload = server.route(
                        self.command, self.path, dict(self.headers.items()), body
                    )
                except HubError as exc:
                    status, payload = exc.status, json.dumps({"error": exc.message}).encode()
                    headers = {
                        "Content-Type": "application/json",
                        "X-Error-Code": exc.code,
                        "X-Error-Message": exc.message,
                    }
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    while self.rfile.readline().strip():  # trailers
                        pass
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.uploads = Uploads(store, self.url, self._authorized)
        self._thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), daemon=True
        )  # shutdown() waits for one poll: 0.05 s, not the default 0.5 s

    def __enter__(self) -> HubServer:
        self._thread.start()
        log.info("hub stand-in on %s", self.url)
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fetched(self) -> list[str]:
        """The repo paths of every file GET through ``resolve`` (in request order)."""
        out = []
        for method, path in self.requests:
            parts = urlsplit(path).path.split("/resolve/", 1)
            if method == "GET" and len(parts) == 2:
                out.append(unquote(parts[1].split("/", 1)[1]))
        return out

    # -- routing -------------------------------------------------------------------------------

    def route(self, method: str, raw: str, headers: dict, body: bytes):
        url = urlsplit(raw)
        parts = url.path.strip("/").split("/")
        query = parse_qs(url.query)
        if parts[0] == "api" and len(parts) >= 4 and parts[1].rstrip("s") in TYPES:
            repo_type, repo_id, rest = (
                parts[1][:-1],
                f"{unquote(parts[2])}/{unquote(parts[3])}",
                parts[4:],
            )
            self._check_access(repo_type, repo_id, headers)
            return self._api(method, repo_type, repo_id, rest, query, headers, body)
        repo_type = "model"
        if parts[0] in ("datasets", "spaces"):
            repo_type, parts = parts[0][:-1], parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id = f"{unquote(parts[0])}/{unquote(parts[1])}"
            self._check_access(repo_type, repo_id, headers)
            path = "/".join(unquote(p) for p in parts[4:])
            return self._resolve(method, repo_type, repo_id, unquote(parts[3]), path, headers)
        return self.uploads.route(method, url.path.strip("/").split("/"), headers, body)

    def _authorized(self, headers: dict) -> bool:
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        return auth.startswith("Bearer ") and auth[len("Bearer ") :] in self.tokens

    def _check_access(self, repo_type: str, repo_id: str, headers: dict) -> None:
        authorized = self._authorized(headers)
        try:
            settings = self.store.settings(repo_type, repo_id)
        except RepoNotFound:
            raise HubError(
                404 if authorized else 401, "RepoNotFound", f"Repository Not Found for {repo_id}"
            ) from None
        if settings["private"] and not authorized:
            raise HubError(401, "RepoNotFound", f"Repository Not Found for {repo_id}")
        if settings["gated"] and not authorized:
            raise HubError(401, "GatedRepo", f"Access to {repo_id} is restricted")

    def _sha(self, repo_type: str, repo_id: str, revision: str) -> str:
        try:
            return self.store.resolve(repo_type, repo_id, revision)
        except RevisionNotFound:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}") from None

    # -- api -----------------------------------------------------------------------------------

    def _api(self, method, repo_type, repo_id, rest, query, headers, body):
        if method == "GET" and not rest:
            return self._json(self._info(repo_type, repo_id, "main"))
        if method == "GET" and len(rest) == 2 and rest[0] == "revision":
            return self._json(self._info(repo_type, repo_id, unquote(rest[1])))
        if method == "GET" and rest == ["refs"]:
            return self._json(self._refs(repo_type, repo_id))
        if method == "GET" and len(rest) >= 2 and rest[0] == "tree":
            path = "/".join(unquote(p) for p in rest[2:])
            return self._tree(repo_type, repo_id, unquote(rest[1]), path, query)
        if method == "POST" and len(rest) == 2 and rest[0] == "paths-info":
            return self._paths_info(repo_type, repo_id, unquote(rest[1]), headers, body)
        return self.uploads.api(method, repo_type, repo_id, rest, headers, body)

    @staticmethod
    def _json(obj, status: int = 200, extra: dict | None = None):
        return (
            status,
            {"Content-Type": "application/json", **(extra or {})},
            json.dumps(obj).encode(),
        )

    def _info(self, repo_type: str, repo_id: str, revision: str) -> dict:
        sha = self._sha(repo_type, repo_id, revision)
        record = self.store.commit_record(repo_type, repo_id, sha)
        settings = self.store.settings(repo_type, repo_id)
        return {
            "_id": sha[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": sha,
            "lastModified": record["date"],
            "private": settings["private"],
            "gated": "auto" if settings["gated"] else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [{"rfilename": p} for p in sorted(record["files"])],
            "createdAt": record["date"],
            "usedStorage": sum(e["size"] for e in record["files"].values()),
            **self._card_data(repo_type, repo_id, record["files"]),
        }

    def _card_data(self, repo_type: str, repo_id: str, files: dict) -> dict:
        """``cardData``: the YAML header of README.md, as the hub parses it for repo info."""
        entry = files.get("README.md")
        if entry is None:
            return {}
        text = self.store.object_path(repo_type, repo_id, entry["sha256"]).read_text()
        if not text.startswith("---"):
            return {}
        try:
            header = yaml.safe_load(text[3:].split("\n---", 1)[0])
        except yaml.YAMLError:
            return {}
        return {"cardData": header} if isinstance(header, dict) else {}

    def _refs(self, repo_type: str, repo_id: str) -> dict:
        settings = self.store.settings(repo_type, repo_id)

        def refs(kind: str, items: dict) -> list[dict]:
            return [
                {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": sha}
                for n, sha in sorted(items.items())
            ]

        return {
            "branches": refs("heads", settings["branches"]),
            "tags": refs("tags", settings["tags"]),
            "converts": [],
        }

    def _entry(self, repo_type: str, repo_id: str, path: str, entry: dict, commit: str) -> dict:
        out = {
            "type": "file",
            "oid": self.store.oid(repo_type, repo_id, entry),
            "size": entry["size"],
            "path": path,
        }
        if entry["lfs"]:
            pointer = lfs_pointer(entry["sha256"], entry["size"])
            out["lfs"] = {
                "oid": entry["sha256"],
                "size": entry["size"],
                "pointerSize": len(pointer),
            }
        return out

    @staticmethod
    def _folders(files: dict) -> set[str]:
        folders: set[str] = set()
        for path in files:
            parts = path.split("/")[:-1]
            folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return folders

    def _tree(self, repo_type, repo_id, revision, path, query):
        sha = self._sha(repo_type, repo_id, revision)
        files = self.store.tree(repo_type, repo_id, sha)
        folders = self._folders(files)
        base = path.strip("/")
        if base and base not in folders:
            raise HubError(404, "EntryNotFound", f"{base} does not exist on {revision}")
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        prefix = f"{base}/" if base else ""

        def wanted(p: str) -> bool:
            return p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])

        entries = [
            {"type": "directory", "oid": "0" * 40, "size": 0, "path": f}
            for f in sorted(folders)
            if wanted(f)
        ]
        entries += [
            self._entry(repo_type, repo_id, p, e, sha)
            for p, e in sorted(files.items())
            if wanted(p)
        ]
        start = int(query.get("cursor", ["0"])[0] or 0)
        page = entries[start : start + self.page]
        extra = {}
        if start + self.page < len(entries):
            params = "&".join(
                f"{k}={quote(v[0])}" for k, v in sorted(query.items()) if k != "cursor"
            )
            link = f"{self.url}/api/{repo_type}s/{repo_id}/tree/{quote(revision, safe='')}"
            if base:
                link += "/" + quote(base)
            link += f"?{params}&cursor={start + self.page}".replace("?&", "?")
            extra["Link"] = f'<{link}>; rel="next"'
        return self._json(page, extra=extra)

    def _paths_info(self, repo_type, repo_id, revision, headers, body):
        sha = self._sha(repo_type, repo_id, revision)
        files = self.store.tree(repo_type, repo_id, sha)
        folders = self._folders(files)
        kind = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        if "json" in kind:
            paths = json.loads(body or b"{}").get("paths", [])
        else:
            paths = parse_qs(body.decode()).get("paths", [])
        out = []
        for p in paths:
            p = p.strip("/")
            if p in files:
                out.append(self._entry(repo_type, repo_id, p, files[p], sha))
            elif p in folders:
                out.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": p})
        return self._json(out)

    # -- files ---------------------------------------------------------------------------------

    def _resolve(self, method, repo_type, repo_id, revision, path, headers):
        sha = self._sha(repo_type, repo_id, revision)
        files = self.store.tree(repo_type, repo_id, sha)
        if path not in files:
            raise HubError(404, "EntryNotFound", f"{path} does not exist on {revision}")
        entry = files[path]
        size = entry["size"]
        etag = entry["sha256"] if entry["lfs"] else self.store.oid(repo_type, repo_id, entry)
        out = {
            "X-Repo-Commit": sha,
            "ETag": f'"{etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if entry["lfs"]:
            out["X-Linked-Size"] = str(size)
            out["X-Linked-Etag"] = f'"{etag}"'
        out.update(self.file_headers)
        source: Path = self.store.object_path(repo_type, repo_id, entry["sha256"])
        wanted = next((v for k, v in headers.items() if k.lower() == "range"), "")
        start, end, status = 0, size - 1, 200
        if wanted.startswith("bytes="):
            first, _, last = wanted[len("bytes=") :].split(",")[0].partition("-")
            if first == "":  # a suffix: the last N bytes
                start = max(0, size - int(last))
            else:
                start = int(first)
                end = min(size - 1, int(last)) if last else size - 1
            if start >= size or start > end:
                out["Content-Range"] = f"bytes */{size}"
                return 416, out, b""
            status = 206
            out["Content-Range"] = f"bytes {start}-{end}/{size}"
        out["Content-Length"] = str(end - start + 1)
        if method == "HEAD":
            return status, out, b""
        with open(source, "rb") as fh:
            fh.seek(start)
            return status, out, fh.read(end - start + 1)
