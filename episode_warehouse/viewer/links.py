"""The viewer's URLs: a partition's page and an episode's (deep links, with the step)."""

from __future__ import annotations

from urllib.parse import urlencode

VIEWER_URL_ENV = "EPISODE_WAREHOUSE_VIEWER_URL"  # set by `warehouse ui` while its viewer runs
DEFAULT_PORT = 8787
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"  # warehouse view's and warehouse ui's default


def partition_url(base: str, source: str, partition: str) -> str:
    """The partition's overview page of the viewer at ``base``."""
    query = urlencode({"view": "partition", "source": source, "partition": partition})
    return f"{base.rstrip('/')}/?{query}"


def episode_url(base: str, source: str, partition: str, episode: int, step: int = 0) -> str:
    """One episode's page, opened at ``step``."""
    query = urlencode(
        {"view": "episode", "source": source, "partition": partition, "episode": episode, "t": step}
    )
    return f"{base.rstrip('/')}/?{query}"
