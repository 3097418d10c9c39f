"""One episode as a Rerun recording (``.rrd``): its cameras and every scalar on one ``step``
timeline (and ``time`` in seconds where the rate is known), so zooming, hovering and
comparing come from the viewer people already use (``rerun episode.rrd``).

Entities: ``cameras/<key>`` (``EncodedImage`` of the JPEG or PNG bytes the source published,
as the TED stores them: a 68-step DROID episode's file went from 35.7 MB of raw pixels to about
its 4.8 MB of JPEG; ``Image`` where the camera keeps pixels; a depth camera as ``DepthImage``,
its values as stored), ``series/<key>/<dimension name>`` (``Scalars``: actions, states, rewards,
bool leaves as 0/1), ``flags/<done|terminated|truncated>`` (0/1 per step), ``task`` and each
text leaf ``texts/<key>`` (``TextLog`` where the text changes). Names from the data are escaped
as entity path parts.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from episode_warehouse.decoded.format import CHW, DEPTH, GRAY
from episode_warehouse.errors import ConfigError
from episode_warehouse.ted.cameras import camera_leaves, declared_images
from episode_warehouse.viewer.episode import (
    FLAGS,
    dimension_names,
    plotted_leaves,
    step_tasks,
    step_texts,
)
from episode_warehouse.viewer.frames import stored_image
from episode_warehouse.viewer.partition import PartitionTed

APPLICATION_ID = "episode-warehouse"


def _image(rr, frame: np.ndarray, layout: str):
    if layout == DEPTH:
        return rr.DepthImage(frame[0])
    if layout == GRAY:
        return rr.Image(frame)
    if layout == CHW:
        hwc = np.ascontiguousarray(frame.transpose(1, 2, 0))
        return rr.Image(hwc[..., 0] if hwc.shape[-1] == 1 else hwc)
    raise ValueError(f"unknown image layout {layout!r}")


def write_episode_rrd(ted: PartitionTed, episode: int, path: Path) -> Path:
    """Write ``episode`` of ``ted`` to the Rerun file ``path`` (written aside, then renamed
    into place); returns ``path``.

    Raises:
        ConfigError: rerun-sdk is not installed (the ``rerun`` extra).
    """
    try:
        import rerun as rr
    except ModuleNotFoundError:
        raise ConfigError(
            "rerun-sdk is not installed",
            subject="open in Rerun",
            fix="install the rerun extra: pip install 'episode-warehouse[rerun]'",
        ) from None

    span = ted.span(episode)
    rows = ted.rows(episode)
    declared = declared_images(ted.record)
    steps = np.arange(span.length)
    indexes = [rr.TimeColumn("step", sequence=steps)]
    if ted.record.fps:
        indexes.append(rr.TimeColumn("time", duration=steps / float(ted.record.fps)))
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    recording_id = f"{ted.source}/{ted.partition}/episode-{episode}"
    rec = rr.RecordingStream(APPLICATION_ID, recording_id=recording_id)
    try:
        rec.save(str(tmp))
        names = ted.record.extra.get("feature_names") or {}
        for key, value in plotted_leaves(rows, declared, ted.record.extra.get("texts", {})):
            flat = np.asarray(value).reshape(span.length, -1).astype(np.float64)
            for j, name in enumerate(dimension_names(names, key, flat.shape[1])):
                entity = rr.escape_entity_path_part(name)
                rec.send_columns(f"series/{'/'.join(map(rr.escape_entity_path_part, key))}"
                                 f"/{entity}", indexes=indexes,
                                 columns=rr.Scalars.columns(scalars=flat[:, j]))  # fmt: skip
        for flag in FLAGS:
            if ("next", flag) in rows.keys(True, True):
                values = rows["next", flag].numpy().reshape(-1).astype(np.float64)
                rec.send_columns(f"flags/{flag}", indexes=indexes,
                                 columns=rr.Scalars.columns(scalars=values))  # fmt: skip
        tasks = step_tasks(rows, ted, episode)
        texts = step_texts(rows, ted)
        cameras = camera_leaves(rows, declared)
        last_task = None
        last_text: dict[str, str] = {}
        for t in range(span.length):
            rec.set_time("step", sequence=t)
            if ted.record.fps:
                rec.set_time("time", duration=t / float(ted.record.fps))
            task = tasks["tasks"][tasks["per_step"][t]] if tasks["per_step"] else (
                tasks["tasks"][0] if tasks["tasks"] else None)  # fmt: skip
            if task is not None and task != last_task:
                rec.log("task", rr.TextLog(task))
                last_task = task
            for leaf in texts:
                text = leaf["texts"][leaf["per_step"][t]]
                if last_text.get(leaf["key"]) != text:
                    parts = map(rr.escape_entity_path_part, leaf["key"].split("/"))
                    rec.log(f"texts/{'/'.join(parts)}", rr.TextLog(text))
                    last_text[leaf["key"]] = text
            for name, (key, layout) in cameras.items():
                entity = f"cameras/{rr.escape_entity_path_part(name)}"
                stored = stored_image(rows.get(key), t, layout)
                if stored is not None:  # the published bytes, not their pixels
                    rec.log(entity, rr.EncodedImage(contents=stored[0], media_type=stored[1]))
                else:
                    rec.log(entity, _image(rr, rows.get(key)[t].numpy(), layout))
        rec.flush()
    except BaseException:
        rec.disconnect()
        tmp.unlink(missing_ok=True)
        raise
    rec.disconnect()
    os.replace(tmp, path)
    return path
