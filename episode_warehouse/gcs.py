"""The google-cloud-storage client, made in one place for every GCS reader and writer.

With an ``endpoint`` (an emulator such as gcp-storage-emulator, ``http://127.0.0.1:PORT``; by
default ``STORAGE_EMULATOR_HOST``, as google-cloud-storage itself reads it) the client is
anonymous and talks to that endpoint. Otherwise application-default credentials are used when
present, and an anonymous client (public buckets) when not.
"""

from __future__ import annotations

import os

EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


def gcs_client(endpoint: str | None = None):
    """A ``google.cloud.storage.Client`` for ``endpoint`` (emulator) or the real GCS."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import storage

    endpoint = endpoint or os.environ.get(EMULATOR_ENV) or None
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
