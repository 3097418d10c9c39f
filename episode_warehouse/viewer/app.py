"""The viewer's HTTP routes (starlette): JSON for the page, lossless PNG frames, the static page.

Everything is read-only: the catalog through the SQL sandbox, TEDs through :class:`PartitionTed`.
Errors of the warehouse's own kinds answer ``{"error": "..."}`` (400, 404 when not built) with
the message that names the input and the fix; anything else is a 500 and is logged.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from episode_warehouse.errors import (
    BusyError,
    NotMaterializedError,
    PartitionKeyError,
    WarehouseError,
)
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root
from episode_warehouse.viewer import listing
from episode_warehouse.viewer.episode import camera_frame, episode_page, step_values
from episode_warehouse.viewer.frames import frame_answer
from episode_warehouse.viewer.hosts import allowed_hosts, guarded
from episode_warehouse.viewer.overview import overview
from episode_warehouse.viewer.partition import PartitionTed

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
PARTITIONS_KEPT = 8  # open partitions (their episodes tables and a few episodes' rows)


class OpenPartitions:
    """The partitions the viewer has open, reopened when their TED was republished."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self._open: OrderedDict[tuple[str, str], tuple[str | None, PartitionTed]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, source: str, partition: str, *, recheck: bool = True) -> PartitionTed:
        """The open TED of the partition; with ``recheck`` (a page load, not a frame) it is
        reopened when another version has been published since."""
        key = (source, partition)
        with self._lock:
            known = self._open.get(key)
        if known is not None and not recheck:
            return known[1]
        ted_rel = artifact_name("ted", source, partition)
        version = self.root.artifact(ted_rel).read()[0].get("version")
        if known is not None and known[0] == version:
            return known[1]
        ted = PartitionTed(self.root, source, partition)
        with self._lock:
            self._open[key] = (version, ted)
            self._open.move_to_end(key)
            while len(self._open) > PARTITIONS_KEPT:
                self._open.popitem(last=False)
        return ted


def _param(request: Request, name: str, default: str | None = None) -> str:
    value = request.query_params.get(name, default)
    if value is None:
        raise PartitionKeyError(
            f"the request has no {name!r}",
            subject=str(request.url.path),
            fix=f"add ?{name}=... to the URL",
        )
    return value


def _int(request: Request, name: str, default: int | None = None) -> int:
    text = _param(request, name, None if default is None else str(default))
    try:
        return int(text)
    except ValueError:
        raise PartitionKeyError(
            f"{name} must be a whole number", subject=repr(text), fix=f"e.g. ?{name}=0"
        ) from None


def build_app(root: Root, hosts: list[str] | None = None) -> ASGIApp:
    """The viewer over the warehouse ``root`` (read only), answering requests for ``hosts`` only
    (default: the loopback names and ``$EPISODE_WAREHOUSE_VIEWER_HOSTS``; see :mod:`.hosts`)."""
    root = root.reader()
    opened = OpenPartitions(root)

    def info(request: Request) -> dict:
        return {"root": root.url}

    def partitions(request: Request) -> dict:
        return {"partitions": listing.partitions(root)}

    def episodes(request: Request) -> dict:
        return listing.episodes(
            root,
            where=request.query_params.get("where", ""),
            sort=request.query_params.get("sort", "episode"),
            descending=request.query_params.get("desc") == "1",
        )

    def episode(request: Request) -> dict:
        ted = opened.get(_param(request, "source"), _param(request, "partition"))
        return episode_page(ted, _int(request, "episode"), root.url)

    def step(request: Request) -> dict:
        ted = opened.get(_param(request, "source"), _param(request, "partition"), recheck=False)
        return step_values(ted, _int(request, "episode"), _int(request, "t"))

    def rerun(request: Request) -> Response:
        import tempfile

        from episode_warehouse.viewer.rerun_file import write_episode_rrd

        source, key = _param(request, "source"), _param(request, "partition")
        number = _int(request, "episode")
        ted = opened.get(source, key, recheck=False)
        ted.span(number)  # a missing episode is a 400 before any work
        with listing.query_slot(), tempfile.TemporaryDirectory(prefix="viewer-rrd-") as tmp:
            data = write_episode_rrd(ted, number, Path(tmp) / "episode.rrd").read_bytes()
        name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{source}-{key}-episode-{number}") + ".rrd"
        disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(data, media_type="application/octet-stream", headers=disposition)

    def partition(request: Request) -> dict:
        from episode_warehouse.catalog.statistics import read_partition_statistics

        source, key = _param(request, "source"), _param(request, "partition")
        ted = opened.get(source, key)
        return overview(ted, read_partition_statistics(root, source, key))

    def frame(request: Request) -> Response:
        ted = opened.get(_param(request, "source"), _param(request, "partition"), recheck=False)
        column, step, image_layout = camera_frame(
            ted, _int(request, "episode"), _int(request, "t"), _param(request, "camera")
        )
        body, media = frame_answer(column, step, image_layout)
        return Response(
            body,
            media_type=media,
            # nosniff: a browser takes the frame for the type we name, never sniffs another
            headers={"Cache-Control": "private, max-age=60", "X-Content-Type-Options": "nosniff"},
        )

    def as_json(handler):
        def endpoint(request: Request) -> Response:
            try:
                answer = handler(request)
            except NotMaterializedError as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except BusyError as exc:
                return JSONResponse({"error": str(exc)}, status_code=503,
                                    headers={"Retry-After": "2"})  # fmt: skip
            except WarehouseError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            return answer if isinstance(answer, Response) else JSONResponse(answer)

        return endpoint

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    api = {
        "info": info,
        "partitions": partitions,
        "episodes": episodes,
        "episode": episode,
        "step": step,
        "rerun": rerun,
        "partition": partition,
        "frame": frame,
    }
    routes: list[Route | Mount] = [
        Route("/", index),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]
    routes += [Route(f"/api/{name}", as_json(handler)) for name, handler in api.items()]
    routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    return guarded(Starlette(routes=routes), allowed_hosts() if hosts is None else hosts)
