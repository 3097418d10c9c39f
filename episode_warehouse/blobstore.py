"""Read a file tree from a ``gs://bucket/prefix`` URL or a local folder, the same way.

``open_blob_store(url)`` gives a :class:`BlobStore` with ``list(prefix)`` and
``download(blob, dest, part=...)``. Listing reads metadata only (GCS size, generation and
crc32c; a local file's size and mtime), never file contents, so a sensor tick over terabytes
takes seconds. Checksums are computed while a file is copied: downloads resume partial files,
verify size and crc32c, retry transient faults with exponential backoff inside a bounded budget,
and publish by rename, so a corrupt or partial file is never visible under its final name.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import BinaryIO, Protocol

import google_crc32c

from episode_warehouse.blobs import (
    BlobInfo,
    ChooseRevision,
    DownloadStats,
    crc32c_b64,
    file_crc32c,
)
from episode_warehouse.errors import (
    ConfigError,
    CorruptInputError,
    SourceMissingError,
    SourceUnreachableError,
)
from episode_warehouse.gcs import gcs_client, refuse_near_url, split_gs_url, url_scheme
from episode_warehouse.guards.names import checked_name, inside
from episode_warehouse.retry import RetryPolicy, call_with_retries

log = logging.getLogger(__name__)

PART_SUFFIX = ".part"
_CHUNK = 8 << 20


class BlobStore(Protocol):
    url: str

    def list(self, prefix: str) -> list[BlobInfo]: ...

    def location(self, prefix: str) -> str:
        """The URL of ``prefix`` as records name it (the hub's pins the commit read)."""
        ...

    def download(
        self,
        blob: BlobInfo,
        dest: Path,
        stats: DownloadStats | None = None,
        part: Path | None = None,
    ) -> str: ...

    def open(self, blob: BlobInfo) -> BinaryIO: ...

    def revision(self, repo: str, choose: ChooseRevision | None = None) -> str | None:
        """The version this store reads of the dataset ``repo`` as a whole (a versioned store's
        commit; ``choose(client, repo)`` picks the revision where none was asked for), or None
        where each object carries its own generation (a bucket, a folder)."""
        ...

    def card_license(self, repo: str, revision: str | None) -> str | None:
        """The license the dataset's card declares at ``revision`` (a hub repo's), or None."""
        ...


class Unversioned:
    """What a store whose objects carry their own generations says of a dataset's version:
    nothing (a bucket, a folder)."""

    def revision(self, repo: str, choose: ChooseRevision | None = None) -> None:
        return None

    def card_license(self, repo: str, revision: str | None) -> None:
        return None


def _verify(part: Path, blob: BlobInfo, stats: DownloadStats) -> str | None:
    """The crc32c of a complete ``.part`` file if it matches ``blob``; else delete it, None."""
    crc = file_crc32c(part)
    size = part.stat().st_size
    if size == blob.size and (not blob.crc32c or crc == blob.crc32c):
        return crc
    stats.rejected_corrupt += 1
    log.info(
        "%s: size/crc32c mismatch (got %d bytes, crc %s; want %d, %s); retrying",
        blob.name,
        size,
        crc,
        blob.size,
        blob.crc32c,
    )
    part.unlink(missing_ok=True)
    return None


class LocalBlobStore(Unversioned):
    """A local folder laid out like the bucket (``<Game>/<run>/replay_logs/...``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)
        if not self.root.is_dir():
            raise SourceMissingError(
                "the local mirror folder does not exist",
                subject=str(self.root),
                fix="point the source URL at an existing folder or a gs:// prefix",
            )

    def location(self, prefix: str) -> str:
        return f"{self.url}/{prefix.strip('/')}"

    def list(self, prefix: str) -> list[BlobInfo]:
        """Files whose name starts with ``prefix`` (as a GCS prefix: ``Pong/run_5-`` matches
        ``Pong/run_5-00000-of-00050``), from ``stat`` alone (size and mtime; no contents read).

        Raises:
            CorruptInputError: a symbolic link below the folder (it could make the mirror copy
                a file from elsewhere, a secret, into the warehouse or a bucket).
        """
        folder, _, _ = prefix.rpartition("/")
        base = inside(self.root, folder, subject=self.url) if folder else self.root
        if not base.is_dir() or base.is_symlink():
            return []
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            for entry in (*dirnames, *filenames):
                path = Path(dirpath, entry)
                if path.is_symlink():
                    raise CorruptInputError(
                        f"refused the symbolic link {path} (to {os.readlink(path)}): a source "
                        "folder's files are copied as they are, never through links",
                        subject=self.url,
                        fix="replace the link by the file itself (cp -L), or remove it",
                    )
            for entry in filenames:
                path = Path(dirpath, entry)
                name = path.relative_to(self.root).as_posix()
                if name.startswith(prefix) and path.is_file():
                    st = path.stat()
                    out.append(BlobInfo(name, st.st_size, "", str(st.st_mtime_ns)))
        return sorted(out, key=lambda b: b.name)

    def download(
        self,
        blob: BlobInfo,
        dest: Path,
        stats: DownloadStats | None = None,
        part: Path | None = None,
    ) -> str:
        """Copy one file, computing its crc32c on the way; returns the crc32c.

        Raises:
            SourceUnreachableError: the file changed while it was copied (retry).
        """
        stats = stats or DownloadStats()
        src = inside(self.root, blob.name, subject=self.url)
        part = part or dest.with_name(dest.name + PART_SUFFIX)
        part.parent.mkdir(parents=True, exist_ok=True)
        checksum = google_crc32c.Checksum()
        try:
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            raise CorruptInputError(
                f"cannot open it without following links ({exc.strerror})",
                subject=str(src),
                fix="replace a link by the file itself (cp -L), or remove it",
            ) from exc
        with open(fd, "rb") as fin, open(part, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                checksum.update(chunk)
                fout.write(chunk)
            # never wider than the source: a 0600 file stays 0600 in the mirror
            source_mode = os.fstat(fin.fileno()).st_mode
            os.fchmod(fout.fileno(), os.fstat(fout.fileno()).st_mode & source_mode & 0o777)
        st = src.stat()
        if st.st_size != blob.size or str(st.st_mtime_ns) != blob.generation:
            part.unlink(missing_ok=True)
            raise SourceUnreachableError(
                "the file changed while it was copied",
                subject=str(src),
                fix="retry once the file is no longer being written",
            )
        stats.downloaded_bytes += blob.size
        os.replace(part, dest)
        return crc32c_b64(checksum)

    def open(self, blob: BlobInfo) -> BinaryIO:
        """Read one file as a stream."""
        return open(inside(self.root, blob.name, subject=self.url), "rb")  # noqa: SIM115


class GcsBlobStore(Unversioned):
    """A ``gs://bucket/prefix`` read with google-cloud-storage."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        retry: RetryPolicy | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.bucket_name = bucket
        self.prefix = prefix.strip("/")
        self.url = f"gs://{bucket}/{self.prefix}".rstrip("/")
        self.retry = retry or RetryPolicy()
        self.endpoint = endpoint
        self._client = None
        self._client_pid = 0

    @property
    def client(self):
        # one client per process: a forked DataLoader worker must not share the parent's
        # pooled connections
        if self._client is None or self._client_pid != os.getpid():
            self._client = gcs_client(self.endpoint)
            self._client_pid = os.getpid()
        return self._client

    def __getstate__(self):
        return {**self.__dict__, "_client": None}

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def location(self, prefix: str) -> str:
        return f"{self.url}/{prefix.strip('/')}"

    def list(self, prefix: str) -> list[BlobInfo]:
        """Objects under ``prefix`` from the listing's metadata (no object is read).

        Raises:
            SourceMissingError: no such bucket, or access denied.
            SourceUnreachableError: the listing kept failing transiently.
        """
        full = self._key(prefix)

        def listing() -> list:
            return list(
                self.client.list_blobs(
                    self.bucket_name, prefix=full, retry=None, timeout=self.retry.timeout_s
                )
            )

        fix = "check the URL, your network, and STORAGE_EMULATOR_HOST if you use one"
        try:
            blobs = call_with_retries(listing, policy=self.retry, subject=self.url, fix=fix)
        except SourceMissingError as exc:
            if "403" in exc.what:
                raise SourceMissingError(
                    "access denied (HTTP 403)",
                    subject=self.url,
                    fix="check the bucket name and your credentials; the Dopamine bucket "
                    "gs://atari-replay-datasets is gone, its RL Unplugged copy is "
                    "gs://rl_unplugged/atari_episodes_ordered",
                ) from exc
            if "404" in exc.what:
                raise SourceMissingError(
                    "the bucket does not exist (HTTP 404)",
                    subject=self.url,
                    fix="check the bucket name in the source URL",
                ) from exc
            raise
        except SourceUnreachableError as exc:
            raise SourceUnreachableError(
                f"cannot list {full!r} ({exc.what})", subject=self.url, fix=fix
            ) from exc
        n = len(self.prefix) + 1 if self.prefix else 0
        return [
            BlobInfo(
                checked_name(b.name[n:], subject=f"{self.url}/{prefix}"),
                int(b.size),
                b.crc32c or "",
                str(b.generation),
            )
            for b in blobs
            if not b.name.endswith("/")  # a console's "folder" placeholder, not a file
        ]

    def download(
        self,
        blob: BlobInfo,
        dest: Path,
        stats: DownloadStats | None = None,
        part: Path | None = None,
    ) -> str:
        """Download with resume (a kept ``part`` file continues with a Range request).

        Returns the verified crc32c.

        Raises:
            SourceUnreachableError: the retry budget is spent (the partial file is kept).
            SourceMissingError: the object is gone or forbidden (404/403).
        """
        stats = stats or DownloadStats()
        part = part or dest.with_name(dest.name + PART_SUFFIX)
        part.parent.mkdir(parents=True, exist_ok=True)
        gblob = self.client.bucket(self.bucket_name).blob(
            self._key(blob.name), generation=int(blob.generation)
        )
        subject = f"{self.url}/{blob.name}"

        def attempt() -> str:
            """One try: resume the part file, verify it, publish it."""
            offset = part.stat().st_size if part.exists() else 0
            if offset > blob.size:
                part.unlink()
                offset = 0
            if offset < blob.size:
                stats.resumed_bytes += offset
                with open(part, "ab") as fh:
                    gblob.download_to_file(
                        fh,
                        start=offset or None,
                        raw_download=True,
                        checksum=None,
                        retry=None,
                        timeout=self.retry.timeout_s,
                    )
                stats.downloaded_bytes += part.stat().st_size - offset
            crc = _verify(part, blob, stats)  # deletes a corrupt part: the next try starts over
            if crc is None:
                raise SourceUnreachableError("size/crc32c mismatch", subject=subject)
            os.replace(part, dest)
            return crc

        def counted() -> None:
            stats.retries += 1

        try:
            return call_with_retries(attempt, policy=self.retry, subject=subject, on_retry=counted)
        except SourceUnreachableError as exc:
            raise SourceUnreachableError(
                f"download failed after {self.retry.attempts} attempts ({exc.what})",
                subject=subject,
                fix="check the source and retry; the partial file is kept and resumed next time",
            ) from exc

    def open(self, blob: BlobInfo) -> BinaryIO:
        """Read one object as a buffered stream of ranged requests (no local copy)."""
        return io.BufferedReader(_GcsReader(self, blob), buffer_size=8 << 20)

    # -- reads of known objects and writes: the bucket as a warehouse root (bucket/) --

    def _call(self, fn, name: str):
        return call_with_retries(fn, policy=self.retry, subject=f"{self.url}/{name}")

    def stat(self, name: str) -> BlobInfo | None:
        """The current generation of one object, or None when there is none."""
        from google.api_core.exceptions import NotFound

        gblob = self.client.bucket(self.bucket_name).blob(self._key(name))
        try:
            self._call(lambda: gblob.reload(retry=None, timeout=self.retry.timeout_s), name)
        except SourceMissingError as exc:
            if isinstance(exc.__cause__, NotFound):
                return None
            raise
        return BlobInfo(name, int(gblob.size), gblob.crc32c or "", str(gblob.generation))

    def read_bytes(
        self,
        name: str,
        generation: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> bytes:
        """Bytes ``[start, end]`` (inclusive, as HTTP ranges, both inside the object) of one
        object, pinned to ``generation`` when given (a 404 once that generation is replaced or
        deleted). A short answer (a connection cut mid-body) is retried like a 503."""
        gblob = self.client.bucket(self.bucket_name).blob(
            self._key(name), generation=int(generation) if generation else None
        )
        want = end - start + 1 if start is not None and end is not None else None

        def fetch() -> bytes:
            data = self._media(gblob, start, end)
            if want is not None and len(data) != want:
                raise SourceUnreachableError(
                    f"short read: {len(data)} of {want} bytes", subject=f"{self.url}/{name}"
                )
            return data

        return self._call(fetch, name)

    def _media(self, gblob, start: int | None, end: int | None) -> bytes:
        """One GET of the object's media URL through the client's authorized session, the
        body read in one call, as stored (no decompression, no checksum: callers check sizes
        and crc32c). google-cloud-storage's ``download_as_bytes`` reads a body 8 KB at a time
        through google-resumable-media: 1.8 ms of CPU a 640 KB range against 0.7 ms here
        (loopback emulator, docs/benchmarks.md). An HTTP error raises google's exception of its
        status, as the library's call does (``NotFound``: a replaced generation)."""
        from google.api_core.exceptions import from_http_response

        url = gblob._get_download_url(self.client)  # alt=media, the generation pinned
        tail = "" if end is None else str(end)  # bytes=N-: from N to the object's end
        headers = {"Range": f"bytes={start}-{tail}"} if start is not None else {}
        response = self.client._http.get(
            url, headers=headers, stream=True, timeout=self.retry.timeout_s
        )
        try:
            if response.status_code >= 400:
                raise from_http_response(response)
            return response.raw.read(decode_content=False)
        finally:
            response.close()

    def upload(
        self,
        name: str,
        *,
        path: Path | None = None,
        data: bytes | None = None,
        if_generation_match: int | None = None,
    ) -> BlobInfo:
        """Upload a file (or ``data``) as ``name``, checked with crc32c by GCS.

        ``if_generation_match`` is GCS's precondition: the object's current generation, or 0
        for "must not exist"; a mismatch raises google's ``PreconditionFailed`` (HTTP 412) at
        once, never retried.
        """
        from google.api_core.exceptions import PreconditionFailed

        gblob = self.client.bucket(self.bucket_name).blob(self._key(name))

        def send() -> None:
            kwargs = {"if_generation_match": if_generation_match, "checksum": "crc32c",
                      "retry": None, "timeout": self.retry.timeout_s}  # fmt: skip
            if path is not None:
                gblob.upload_from_filename(str(path), **kwargs)
            else:
                gblob.upload_from_string(data or b"", **kwargs)

        try:
            self._call(send, name)
        except SourceMissingError as exc:
            if isinstance(exc.__cause__, PreconditionFailed):
                raise exc.__cause__ from None  # the caller's race to settle, not a fault
            raise
        return BlobInfo(name, int(gblob.size), gblob.crc32c or "", str(gblob.generation))

    def delete(self, name: str, generation: str | None = None) -> bool:
        """Delete one object (only that ``generation`` when given); False if it was gone."""
        from google.api_core.exceptions import NotFound, PreconditionFailed

        gblob = self.client.bucket(self.bucket_name).blob(self._key(name))
        try:
            self._call(
                lambda: gblob.delete(
                    if_generation_match=int(generation) if generation else None, retry=None,
                    timeout=self.retry.timeout_s,
                ),
                name,
            )  # fmt: skip
        except SourceMissingError as exc:
            if isinstance(exc.__cause__, NotFound | PreconditionFailed):
                return False
            raise
        return True


class _GcsReader(io.RawIOBase):
    """A GCS object (``blob.size`` bytes) read in ranged requests of ``chunk`` bytes, pinned to
    one generation, each a :meth:`GcsBlobStore.read_bytes` (retried on transient failures and
    short reads); streaming decode reads files this way."""

    def __init__(self, store: GcsBlobStore, blob: BlobInfo, chunk: int = 8 << 20) -> None:
        self.store, self.blob, self.chunk, self.pos = store, blob, chunk, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self.chunk, self.blob.size - self.pos)
        if want <= 0:
            return 0
        end = self.pos + want - 1
        data = self.store.read_bytes(self.blob.name, self.blob.generation, self.pos, end)
        n = len(data)
        buffer[:n] = data
        self.pos += n
        return n


def open_blob_store(
    url: str, retry: RetryPolicy | None = None, endpoint: str | None = None
) -> BlobStore:
    """A store for ``gs://bucket[/prefix]``, ``hf://datasets[/OWNER/NAME[@REV]]`` (the hub,
    :mod:`episode_warehouse.hub`), ``file:///path`` or a plain local path.

    ``endpoint`` points GCS at an emulator (``http://127.0.0.1:PORT``); default:
    ``STORAGE_EMULATOR_HOST`` when set, as google-cloud-storage does.

    Raises:
        ConfigError: the URL is malformed or of an unsupported scheme.
        SourceMissingError: a local folder that does not exist.
    """
    scheme = url_scheme(url)
    if scheme == "gs":
        bucket, prefix = split_gs_url(url, setting="the source URL")
        return GcsBlobStore(bucket, prefix, retry, endpoint)
    if scheme == "hf":
        from episode_warehouse.hub.client import HubClient
        from episode_warehouse.hub.store import HubBlobStore
        from episode_warehouse.hub.url import parse_hub_url

        hub = parse_hub_url(url, setting="the source URL")
        return HubBlobStore(hub, HubClient(repo_type=hub.repo_type, policy=retry))
    if scheme == "file":
        return LocalBlobStore(Path(url[7:]))
    if not url:
        raise ConfigError("empty source URL", fix="set it to gs://BUCKET/PREFIX or a folder")
    refuse_near_url(url, setting="the source URL")
    return LocalBlobStore(Path(url).expanduser())
