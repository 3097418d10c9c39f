"""``warehouse view``: the episode viewer (``episode_warehouse.viewer``) on 127.0.0.1:PORT.

The socket is bound before the ready line is printed, so the URL answers when it is announced;
a port in use is a one-line error with the fix.
"""

from __future__ import annotations

import errno
import logging
import socket

from episode_warehouse.errors import ConfigError
from episode_warehouse.storage import parse_root

HOST = "127.0.0.1"


def listening_socket(port: int) -> socket.socket:
    """A socket listening on ``HOST:port``.

    Raises:
        ConfigError: the port is taken or not allowed.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        reason = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc})"
        raise ConfigError(
            f"port {port} {reason}",
            subject=f"{HOST}:{port}",
            fix="choose another with --port (warehouse ui: --viewer-port)",
        ) from None
    sock.listen(128)
    return sock


def run_view(root: str | None, port: int) -> int:
    """Serve the viewer over ``root`` (default ``$EPISODE_WAREHOUSE_ROOT``) until Ctrl-C."""
    import uvicorn

    from episode_warehouse.viewer.app import build_app

    reader = parse_root(root)
    if not reader.exists():
        raise ConfigError(
            "no warehouse root here: the folder does not exist",
            subject=reader.url,
            fix="pass --root of a warehouse you built (the demo's: --root demo-data/warehouse)",
        )
    sock = listening_socket(port)
    port = sock.getsockname()[1]  # --port 0: the one the system chose
    config = uvicorn.Config(build_app(reader), log_level=logging.WARNING, lifespan="off")
    print(f"episode viewer of {reader.url} ready: http://{HOST}:{port}  (Ctrl-C to stop)",
          flush=True)  # fmt: skip
    uvicorn.Server(config).run(sockets=[sock])
    return 0
