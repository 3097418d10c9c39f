"""The one parse of a warehouse root setting: a folder, or ``gs://BUCKET/PREFIX``."""

from __future__ import annotations

import os
from pathlib import Path

from episode_warehouse.gcs import refuse_near_url, split_gs_url, url_scheme
from episode_warehouse.settings import ROOT_ENV, Settings
from episode_warehouse.storage.base import Root

_BUCKET_SCHEME = "gs"


def root_setting(value: str | os.PathLike) -> str:
    """A warehouse root setting in its one canonical form, the form every command, the
    settings and the cluster pass on: a bucket as its checked URL (``gs://BUCKET/PREFIX``, no
    trailing slash), a folder as its absolute path (``~`` expanded).

    A ``gs://`` URL is never taken for a folder (``Path("gs://b/p").resolve()`` is the folder
    ``./gs:/b/p``).

    Raises:
        ConfigError: a malformed bucket URL, or something URL-like that is not one.
    """
    text = str(value)
    if url_scheme(text) == _BUCKET_SCHEME:
        bucket, prefix = split_gs_url(text, setting=ROOT_ENV, kind="warehouse root")
        return f"gs://{bucket}/{prefix}".rstrip("/")
    refuse_near_url(text, setting=ROOT_ENV, kind="warehouse root")
    return str(Path(text).expanduser().resolve())


def parse_root(
    value: str | os.PathLike | Root | None = None,
    settings: Settings | None = None,
    *,
    writer: bool = False,
) -> Root:
    """The root ``value`` names (None: ``settings.root``; a :class:`Root` is returned as it is,
    or as its reader), with the endpoint, local copy and cache of ``settings`` (default: the
    environment's now).

    ``writer``: this process builds and publishes here, so a bucket root gets its local copy
    (created and bound). A reader's root writes nothing: not a folder, not a marker.

    Raises:
        ConfigError: a malformed bucket URL, something URL-like that is not one, a root that is
            a file, or a local copy that mirrors another bucket.
    """
    if isinstance(value, Root):
        return value if writer or not value.writer else value.reader()
    if value is None:
        settings = settings or Settings.from_env()
        value = settings.root
    text = root_setting(value)
    if url_scheme(text) == _BUCKET_SCHEME:
        from episode_warehouse.storage.bucket.bucket_root import BucketRoot

        return BucketRoot.open(text, settings or Settings.from_env(root=text), writer=writer)
    from episode_warehouse.storage.local import open_local

    return open_local(text, writer=writer)
