"""Who may talk to the viewer: requests whose ``Host`` is a loopback name (or one the user
configured), and API requests from the viewer's own pages only.

The viewer binds 127.0.0.1, but a browser can still be made to reach it: a DNS-rebinding name
pointed at 127.0.0.1 makes a foreign page's requests same-origin to the browser, and they
carry that name as their ``Host``. Refusing unknown hosts closes that; refusing cross-origin
API requests (an ``Origin`` that is not an allowed host, or ``Sec-Fetch-Site: cross-site``)
closes reads from other sites' pages whatever the browser's own rules.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
HOSTS_ENV = "EPISODE_WAREHOUSE_VIEWER_HOSTS"  # more names, comma-separated (a proxy's name)


def allowed_hosts(extra: str | None = None) -> list[str]:
    """The loopback names and those of ``extra`` (default: ``$EPISODE_WAREHOUSE_VIEWER_HOSTS``)."""
    value = os.environ.get(HOSTS_ENV, "") if extra is None else extra
    return [*LOOPBACK, *(h.strip().lower() for h in value.split(",") if h.strip())]


class SameOriginApi:
    """Refuse ``/api/`` requests that a page of another origin made (403)."""

    def __init__(self, app: ASGIApp, hosts: list[str]) -> None:
        self.app, self.hosts = app, set(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/"):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            host = (urlsplit(origin).hostname or "") if origin else None
            if headers.get("sec-fetch-site") == "cross-site" or (
                host is not None and host not in self.hosts and f"[{host}]" not in self.hosts
            ):
                refused = PlainTextResponse("cross-origin requests are refused", 403)
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def guarded(app: ASGIApp, hosts: list[str]) -> ASGIApp:
    """``app`` answering only requests for ``hosts``, its API only to its own pages."""
    return TrustedHostMiddleware(SameOriginApi(app, hosts), allowed_hosts=hosts)
