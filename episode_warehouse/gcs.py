"""The google-cloud-storage client, made in one place for every GCS reader and writer.

With an ``endpoint`` (an emulator such as gcp-storage-emulator, ``http://127.0.0.1:PORT``; by
default ``STORAGE_EMULATOR_HOST``, as google-cloud-storage itself reads it) the client is
anonymous and talks to that endpoint. Otherwise application-default credentials are used when
present, and an anonymous client (public buckets) when not.
"""

from __future__ import annotations

import re

from episode_warehouse import settings
from episode_warehouse.errors import ConfigError
from episode_warehouse.guards.names import name_problem
from episode_warehouse.settings import Settings

EMULATOR_ENV = settings.EMULATOR_ENV  # re-exported: the sources' resources name it


def gcs_client(endpoint: str | None = None):
    """A ``google.cloud.storage.Client`` for ``endpoint`` (emulator) or the real GCS."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import storage

    endpoint = endpoint or Settings.from_env().gcs_endpoint
    if endpoint:
        return storage.Client(
            project="episode-warehouse",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": endpoint},
        )
    try:
        return storage.Client()
    except (DefaultCredentialsError, OSError):
        return storage.Client.create_anonymous_client()


_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def url_scheme(value: str) -> str | None:
    """The scheme of a URL setting (``"gs"`` of ``gs://b/p``, ``"hf"``, ``"file"``), or None
    for anything without ``scheme://`` (a local path): the one place a setting's scheme is
    read, so that every store, source and root tells URLs apart alike."""
    match = _SCHEME_RE.match(value)
    if match is None or len(match.group(1)) == 1 or not value[match.end() :].startswith("//"):
        return None
    return match.group(1)


def split_gs_url(url: str, *, setting: str, kind: str = "source") -> tuple[str, str]:
    """``gs://BUCKET[/PREFIX]`` -> (bucket, prefix without outer slashes).

    Raises:
        ConfigError: not ``gs://``, a bucket name GCS would not accept, or a prefix with an
            empty, ``.`` or ``..`` segment, a backslash or a control character (the prefix's
            names become local folders of the scratch copy and the mirrors).
    """
    bucket, _, prefix = url.partition("://")[2].partition("/")
    prefix = prefix.strip("/")
    fix = f"write {setting} as gs://BUCKET/PREFIX (lowercase bucket name, no '..' in the prefix)"
    if url_scheme(url) != "gs" or not _BUCKET_RE.match(bucket):
        raise ConfigError(
            f"malformed {kind} URL, not a gs:// URL GCS accepts", subject=repr(url), fix=fix
        )
    problem = name_problem(prefix) if prefix else None
    if problem is not None:
        raise ConfigError(
            f"malformed {kind} URL, not a gs:// URL: its prefix {problem}",
            subject=repr(url),
            fix=fix,
        )
    return bucket, prefix


def refuse_near_url(value: str, *, setting: str, kind: str = "source") -> None:
    """Refuse a value that was meant as a URL but is not one (``gs:/x``, ``gs:x``,
    ``s3://...``) instead of taking it for a local folder named ``gs:``.

    Raises:
        ConfigError: naming the value and the forms that are accepted.
    """
    match = _SCHEME_RE.match(value)
    if match is None or len(match.group(1)) == 1:  # no scheme (or a drive letter)
        return
    scheme = match.group(1)
    if value.startswith(f"{scheme}://"):
        what = f"unsupported URL scheme {scheme!r}: a {scheme}:// {kind} is not supported"
    else:
        what = f"this looks like a {scheme}: URL but lacks the '//' after '{scheme}:'"
    raise ConfigError(
        what, subject=repr(value), fix=f"set {setting} to a local folder or to gs://BUCKET/PREFIX"
    )
