"""A small fault-injecting HTTP proxy for loopback tests: sits in front of the GCS emulator or
the hub stand-in.

Object downloads (GCS ``alt=media``; the hub's ``GET .../resolve/...``) take their fault from a
schedule, in order: ``503``, ``reset``
(connection dropped before any answer), ``timeout`` (no answer for ``stall_s``), ``truncate``
(half the body, then the connection closes), ``corrupt`` (the full body with bytes flipped),
``lost`` (forwarded, the upstream acts, then the connection drops before its answer), ``None``
(pass through). Requests whose path holds one of ``fault_on`` (e.g. the hub's ``/commit/``)
take faults from the same schedule. Everything else passes through. Bounded: it serves until
stopped.

It also counts what it serves: ``media_bytes[object name]`` and ``media_reads[object name]``
(bytes and requests of object reads, the counting proxy of the bucket tests) and ``uploads``;
with ``hold_uploads_after=N`` every upload after the N-th waits (unanswered) until the proxy
stops, so a test can kill a publisher between two files.
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class FaultProxy:
    def __init__(
        self,
        upstream: str,
        schedule: list[str | None],
        stall_s: float = 4.0,
        repeat_last: bool = False,
        hold_uploads_after: int | None = None,
        fault_on: tuple[str, ...] = (),
    ) -> None:
        self.upstream = urlparse(upstream)
        self.media_bytes: Counter = Counter()
        self.media_reads: Counter = Counter()
        self.uploads = 0
        self.hold_uploads_after = hold_uploads_after
        self.fault_on = fault_on
        self._released = threading.Event()
        self.schedule = list(schedule)
        self.repeat_last = repeat_last
        self.stall_s = stall_s
        self.injected: Counter = Counter()
        self.media_requests = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms stall

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy._hold(self.command, self.path):
                    proxy._released.wait()
                    self.close_connection = True
                    return
                fault = proxy._next_fault(self.command, self.path)
                if fault == "reset":
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    return
                if fault == "timeout":
                    time.sleep(proxy.stall_s)
                    self.close_connection = True
                    return
                if fault == "503":
                    payload = b'{"error": {"code": 503, "message": "injected"}}'
                    self.send_response(503)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fault == "lost":  # the upstream acted; its answer never arrives
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    return
                if "alt=media" in self.path:
                    name = unquote(urlparse(self.path).path.rsplit("/o/", 1)[-1])
                    with proxy._lock:
                        proxy.media_bytes[name] += len(data)
                        proxy.media_reads[name] += 1
                if fault == "corrupt" and data:
                    data = bytes(b ^ 0x5A if i % 97 == 0 else b for i, b in enumerate(data))
                self.send_response(resp.status)
                head = self.command == "HEAD"  # no body: the upstream's length is the answer
                for k, v in resp.getheaders():
                    skip = ("transfer-encoding", "connection") + (
                        () if head else ("content-length",)
                    )
                    if k.lower() not in skip:
                        self.send_header(k, v)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if head:
                    return
                if fault == "truncate":
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), daemon=True
        )  # shutdown() waits for one poll: 0.05 s, not the default 0.5 s

    def _hold(self, command: str, path: str) -> bool:
        if command not in ("POST", "PUT") or "uploadType" not in path and "upload_id" not in path:
            return False
        with self._lock:
            self.uploads += 1
            return self.hold_uploads_after is not None and self.uploads > self.hold_uploads_after

    def _next_fault(self, command: str, path: str) -> str | None:
        hub_file = command == "GET" and "/resolve/" in path
        chosen = any(part in path for part in self.fault_on)
        if "alt=media" not in path and not hub_file and not chosen:
            return None
        with self._lock:
            self.media_requests += 1
            if self.schedule:
                fault = (
                    self.schedule[0]
                    if (self.repeat_last and len(self.schedule) == 1)
                    else self.schedule.pop(0)
                )
            else:
                fault = None
            if fault:
                self.injected[fault] += 1
            return fault

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()
