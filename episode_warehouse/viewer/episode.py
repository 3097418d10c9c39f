"""What the episode page shows, from one episode's TED rows: cameras, plotted series with the
names of their dimensions, done marks, the task at each step, and the Python that opens it."""

from __future__ import annotations

import math

import numpy as np
import torch
from tensordict import TensorDictBase

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.ted.cameras import camera_leaves, declared_images
from episode_warehouse.ted.layout import END_FLAGS, IDS
from episode_warehouse.viewer.partition import PartitionTed, Span

MAX_PLOTTED_DIMS = 32  # a wider leaf (a language embedding) is listed, not plotted
# what one episode page may hold: the plotted points of all its series together (a 100k-step
# episode of 40 dimensions built a 503 MB answer); a longer series is sent as each bucket's
# minimum and maximum (its shape and extremes drawn exactly), its exact value at a step comes
# from the step route (step_values)
MAX_POINTS = 200_000
POINTS_PER_SERIES = (100, 2_000)
FLAGS = END_FLAGS


def dimension_names(feature_names: dict, key: tuple[str, ...], dims: int) -> list[str]:
    """The names of a leaf's dimensions: the source's (a LeRobot feature's ``names``), else
    ``key[i]``."""
    declared = feature_names.get(".".join(key))
    if isinstance(declared, dict):  # older LeRobot: {"motors": [...]}
        declared = next(iter(declared.values()), None)
    if (
        isinstance(declared, list)
        and len(declared) == dims
        and all(isinstance(n, str) for n in declared)
    ):
        return list(declared)
    label = "/".join(key)
    return [label] if dims == 1 else [f"{label}[{i}]" for i in range(dims)]


def _order(key: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    first = {"action": 0, "observation": 1, "next": 2}.get(key[0], 3)
    return first, key


def plotted_leaves(rows: TensorDictBase, declared: dict | None, texts=()):
    """(path, leaf) of every numeric leaf other than cameras, flags, bookkeeping and text
    leaves (``texts``: the TED's text keys, indices into its tables: shown as their text)."""
    cameras = {path for path, _ in camera_leaves(rows, declared).values()}
    cameras |= {tuple(name.split("/")) for name in texts}
    for key in sorted(rows.keys(True, True), key=lambda k: _order(_path(k))):
        path = _path(key)
        value = rows.get(key)
        if (
            path in cameras
            or path in {(k,) for k in IDS}
            or (path[0] == "next" and path[1:2] == ("observation",))
            or path[-1] in END_FLAGS  # marks, not plots
        ):
            continue
        yield path, value  # bool leaves too (bridge's open_gripper), drawn as 0 and 1


def _json_values(values: np.ndarray) -> list:
    return [v if math.isfinite(v) else None for v in values.tolist()]


def envelope(values: np.ndarray, points: int) -> tuple[list[int], list]:
    """(steps, values) of at most ``points`` points drawing ``values`` (one dimension): every
    step when there are few enough, else each bucket's minimum and maximum at their steps (a
    bucket without a finite value: its first step, as None)."""
    n = len(values)
    if n <= points:
        return list(range(n)), _json_values(values)
    width = -(-n // max(1, points // 2))
    padded = np.full(-(-n // width) * width, np.nan)
    padded[:n] = values
    finite = np.isfinite(padded)
    grid = padded.reshape(-1, width)
    base = np.arange(grid.shape[0]) * width
    low = np.where(finite, padded, np.inf).reshape(grid.shape).argmin(1) + base
    high = np.where(finite, padded, -np.inf).reshape(grid.shape).argmax(1) + base
    steps = np.unique(np.concatenate([low, high]))
    steps = steps[steps < n]
    return steps.tolist(), _json_values(values[steps])


def series(
    rows: TensorDictBase, feature_names: dict, declared: dict | None = None, texts=()
) -> tuple[list[dict], list[dict]]:
    """(plotted, not plotted): one entry per numeric leaf other than cameras, flags and
    bookkeeping. A plotted entry has ``key``, ``names``, ``values`` (``[dims][points]``; NaN
    and infinities as None) and ``steps`` (``[dims][points]``: the step of each point; every
    step when the page's :data:`MAX_POINTS` allow, else each bucket's minimum and maximum)."""
    leaves, plotted, wide = [], [], []
    for path, value in plotted_leaves(rows, declared, texts):
        flat = np.asarray(value).reshape(len(value), -1)
        if flat.shape[1] > MAX_PLOTTED_DIMS:
            wide.append({"key": "/".join(path), "dims": flat.shape[1]})
        else:
            leaves.append((path, flat))
    dims = sum(flat.shape[1] for _, flat in leaves)
    low, high = POINTS_PER_SERIES
    points = min(high, max(low, MAX_POINTS // max(dims, 1)))
    for path, flat in leaves:
        drawn = [envelope(flat[:, j].astype(np.float64), points) for j in range(flat.shape[1])]
        plotted.append({
            "key": "/".join(path),
            "names": dimension_names(feature_names, path, flat.shape[1]),
            "steps": [s for s, _ in drawn],
            "values": [v for _, v in drawn],
        })  # fmt: skip
    return plotted, wide


def step_values(ted: PartitionTed, episode: int, step: int) -> dict[str, list]:
    """The exact value of every plotted series at ``step`` of ``episode``: ``{key: [dims]}``
    (the page's readout when its series are drawn from buckets)."""
    rows = ted.rows(episode)
    if not 0 <= step < len(rows):
        raise PartitionKeyError(
            f"no step {step}",
            subject=f"{ted.source}/{ted.partition} episode {episode}",
            fix=f"ask for a step from 0 to {len(rows) - 1}",
        )
    return {
        "/".join(path): _json_values(np.asarray(value[step]).reshape(-1).astype(np.float64))
        for path, value in plotted_leaves(
            rows, declared_images(ted.record), ted.record.extra.get("texts", {})
        )
        if int(np.prod(value.shape[1:], dtype=np.int64)) <= MAX_PLOTTED_DIMS
    }


def _path(key) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def flag_steps(rows: TensorDictBase) -> dict[str, list[int]]:
    """The steps whose ``("next", flag)`` is set, for done, terminated and truncated."""
    out = {}
    for flag in FLAGS:
        if ("next", flag) in rows.keys(True, True):
            out[flag] = torch.nonzero(rows["next", flag].reshape(-1)).reshape(-1).tolist()
    return out


def step_tasks(rows: TensorDictBase, ted: PartitionTed, episode: int) -> dict:
    """The task text: ``tasks`` (the distinct texts) and ``per_step`` (an index into them per
    step, or None when the episode has one task for all its steps)."""
    tasks = list(ted.record.tasks)
    if "task_index" in rows.keys(True, True) and tasks:
        index = rows["task_index"].reshape(-1).tolist()
        if all(0 <= i < len(tasks) for i in index):
            return {"tasks": tasks, "per_step": index}
    instruction = ted.column("language_instruction")
    text = instruction[episode] if instruction is not None else None
    return {"tasks": [text] if text else [], "per_step": None}


def step_texts(rows: TensorDictBase, ted: PartitionTed) -> list[dict]:
    """Each text leaf of the TED (DROID's ``language_instruction_2``, ``_3``) as the page shows
    it: ``key``, ``texts`` (the distinct texts of this episode) and ``per_step`` (an index into
    them per step); never plotted as the numbers they are stored as."""
    out = []
    keys = {_path(k) for k in rows.keys(True, True)}
    for name, table in sorted(ted.record.extra.get("texts", {}).items()):
        path = tuple(name.split("/"))
        if path not in keys:
            continue
        index = rows.get(path).reshape(-1).numpy().astype(np.int64)
        used, per_step = np.unique(index, return_inverse=True)
        if len(used) and (used.min() < 0 or used.max() >= len(table)):
            continue  # an index outside its table: the TED check reports it
        out.append({"key": name, "texts": [str(table[i]) for i in used],
                    "per_step": per_step.tolist()})  # fmt: skip
    return out


def snippet(root_url: str, source: str, partition: str, span: Span) -> str:
    """The Python that opens exactly this episode of the warehouse at ``root_url`` (the page
    adds the line of the step it shows)."""
    return (
        "from episode_warehouse import open_ted\n\n"
        f"td = open_ted({source!r}, {partition!r}, root={root_url!r})\n"
        f"episode = td[{span.start}:{span.start + span.length}]"
        f"  # episode {span.episode}: {span.length} steps\n"
    )


def episode_page(ted: PartitionTed, episode: int, root_url: str) -> dict:
    """Everything the episode page draws, as JSON-ready values."""
    span = ted.span(episode)
    rows = ted.rows(episode)
    declared = declared_images(ted.record)
    texts = ted.record.extra.get("texts", {})
    plotted, wide = series(rows, ted.record.extra.get("feature_names") or {}, declared, texts)
    returns = ted.column("return")
    return {
        "source": ted.source,
        "partition": ted.partition,
        "episode": episode,
        "episodes": len(ted.episodes),
        "start": span.start,
        "length": span.length,
        "return": None
        if returns is None or not math.isfinite(returns[episode])
        else float(returns[episode]),
        "fps": ted.record.fps,
        "cameras": [
            {"name": name, "layout": layout}
            for name, (_, layout) in camera_leaves(rows, declared).items()
        ],
        "series": plotted,
        "not_plotted": wide,
        "flags": flag_steps(rows),
        **step_tasks(rows, ted, episode),
        "texts": step_texts(rows, ted),
        "python": snippet(root_url, ted.source, ted.partition, span),
    }


def camera_frame(
    ted: PartitionTed, episode: int, step: int, camera: str
) -> tuple[torch.Tensor, int, str]:
    """The column of ``camera`` in ``episode`` (a tensor indexed by step: an encoded camera's
    decodes only what is asked of it), the checked step, and the camera's layout."""
    rows = ted.rows(episode)
    cameras = camera_leaves(rows, declared_images(ted.record))
    subject = f"{ted.source}/{ted.partition} episode {episode}"
    if camera not in cameras:
        raise PartitionKeyError(
            f"no camera {camera!r}",
            subject=subject,
            fix=f"ask for one of: {', '.join(cameras) or '(this TED has no camera)'}",
        )
    if not 0 <= step < len(rows):
        raise PartitionKeyError(
            f"no step {step}", subject=subject, fix=f"ask for a step from 0 to {len(rows) - 1}"
        )
    path, layout = cameras[camera]
    return rows.get(path), step, layout
