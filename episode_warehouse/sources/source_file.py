"""Where a decoder reads one source file: a local path (the mirrored copy), or a blob of a
store read in place (streaming mode: ranged reads, no local copy). Picklable, so a worker
process can open it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    """One file: ``path`` when it is local, else ``store_url`` with the blob's name, size and
    generation (``endpoint`` points GCS at an emulator)."""

    name: str  # the file name, for errors and source_files
    path: str = ""  # local file
    store_url: str = ""  # or: a store (gs://...) and the blob's name and generation
    endpoint: str | None = None
    blob: str = ""
    size: int = 0
    generation: str = ""

    def open(self):
        if self.path:
            return open(self.path, "rb")  # noqa: SIM115 - the caller closes it
        from episode_warehouse.blobstore import BlobInfo, open_blob_store

        store = open_blob_store(self.store_url, endpoint=self.endpoint)
        return store.open(BlobInfo(self.blob, self.size, "", self.generation))
