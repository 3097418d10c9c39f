"""Episodes of a Minari ``arrow`` or ``parquet`` dataset: ``data/<id>/`` per episode (Minari's
``ArrowStorage``, written by ``pyarrow.dataset.write_dataset`` partitioned by episode id), with
the episode's ``metadata.json`` (``id``, ``seed``, ``options``, ``total_steps``).

Each episode's table has N+1 rows: ``observations`` (a fixed-size list per Box, MultiDiscrete or
MultiBinary row, a struct for Dict (by key) and Tuple (``"0"``, ``"1"`` ...), binary JPEG for an
image when ``jpeg_encoding``, the value for Discrete, strings for Text), and ``actions``,
``rewards``, ``terminations``, ``truncations`` padded by one row at the end; ``infos`` a struct
whose fixed-size lists carry their row shape in the field metadata (``shape``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.json_input import read_json_file
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.sources.minari.episode import RawEpisode
from episode_warehouse.sources.minari.images import decode_frames
from episode_warehouse.sources.minari.metadata import METADATA, DatasetInfo
from episode_warehouse.sources.minari.spaces import Leaf

_FIX = "the dataset is malformed: download it again, or write it again with Minari"
MAX_INFO_LEAVES = 256


def _read_table(path: Path, data_format: str) -> pa.Table:
    """The file's table, its buffers validated (``validate(full=True)``: offsets and lengths
    inside their buffers) before any value is read: an IPC file is not checked on reading, and
    a damaged offset would make pyarrow read outside its buffer."""
    try:
        if data_format == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            with pa.OSFile(str(path)) as source:  # read into memory: one episode's file
                table = pa.ipc.open_file(source).read_all()
        table.validate(full=True)
        return table
    except (OSError, pa.ArrowInvalid, pa.ArrowException) as exc:
        raise CorruptInputError(
            f"not a readable {data_format} file ({exc})", subject=str(path), fix=_FIX
        ) from None


def _episode_table(folder: Path, data_format: str) -> tuple[pa.Table, str]:
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(("_", ".")) and p.name != METADATA
    )
    if not files:
        raise CorruptInputError("no data file for this episode", subject=str(folder), fix=_FIX)
    tables = [_read_table(p, data_format) for p in files]
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowInvalid as exc:
        raise CorruptInputError(
            f"the episode's files disagree ({exc})", subject=str(folder), fix=_FIX
        ) from None
    return table, files[0].relative_to(folder.parent.parent).as_posix()


def _member(array: pa.Array, part: str, where: str) -> pa.Array:
    if not pa.types.is_struct(array.type) or array.type.get_field_index(part) < 0:
        raise CorruptInputError(
            f"no field {part!r} (the space declares it)", subject=where, fix=_FIX
        )
    return array.field(part)


def _leaf_values(column: pa.Array, leaf: Leaf, info: DatasetInfo, where: str):
    for part in leaf.path:
        column = _member(column, part, where)
    key = f"{where} {'/'.join(leaf.path) or '(root)'}"
    if leaf.kind == "text":
        return [str(v) for v in column.to_pylist()]
    if leaf.image and info.jpeg_encoding and pa.types.is_binary(column.type):
        return decode_frames([b.as_py() or b"" for b in column], leaf, key)
    if pa.types.is_fixed_size_list(column.type):
        flat = column.flatten().to_numpy(zero_copy_only=False)
        width = column.type.list_size
        if width != int(np.prod(leaf.shape, dtype=np.int64)):
            raise CorruptInputError(
                f"rows of {width} values; the space declares the shape {leaf.shape}",
                subject=key,
                fix="the metadata's space disagrees with the data: " + _FIX,
            )
        return flat.reshape(len(column), *leaf.shape)
    if (
        pa.types.is_integer(column.type)
        or pa.types.is_floating(column.type)
        or pa.types.is_boolean(column.type)
    ):
        return column.to_numpy(zero_copy_only=False)
    raise CorruptInputError(
        f"a column of type {column.type} where the space has a {leaf.kind}", subject=key, fix=_FIX
    )


def _infos(
    column: pa.Array, where: str, prefix: tuple[str, ...] = ()
) -> dict[tuple[str, ...], np.ndarray]:
    out: dict[tuple[str, ...], np.ndarray] = {}
    for i, f in enumerate(column.type):
        if len(out) >= MAX_INFO_LEAVES:
            break
        checked_segment(f.name, subject=where, what="info name")  # it names a decoded file
        values = column.field(i)
        if pa.types.is_struct(f.type):
            out.update(_infos(values, where, (*prefix, f.name)))
        elif pa.types.is_fixed_size_list(f.type) and f.metadata and b"shape" in f.metadata:
            shape = tuple(int(d) for d in f.metadata[b"shape"].split(b",") if d)
            flat = values.flatten().to_numpy(zero_copy_only=False)
            if flat.dtype.kind in "biuf" and flat.size == len(values) * int(np.prod(shape)):
                out[(*prefix, f.name)] = flat.reshape(len(values), *shape)
        elif (
            pa.types.is_integer(f.type)
            or pa.types.is_floating(f.type)
            or pa.types.is_boolean(f.type)
        ):
            out[(*prefix, f.name)] = values.to_numpy(zero_copy_only=False)
    return out


def _steps(table: pa.Table, name: str) -> np.ndarray:
    """A per-step column without the row Minari pads it with (N of the N+1 rows)."""
    return table.column(name).combine_chunks()[:-1].to_numpy(zero_copy_only=False)


def arrow_episodes(info: DatasetInfo) -> Iterator[RawEpisode]:
    """The dataset's episodes in id order, one table in memory at a time.

    Raises:
        CorruptInputError: an episode folder missing, a file unreadable, a column missing.
    """
    data = Path(info.data_dir)
    for i in range(info.total_episodes):
        folder = data / str(i)
        if not folder.is_dir() or folder.is_symlink():
            raise CorruptInputError(
                f"no folder for episode {i} of the metadata's {info.total_episodes}",
                subject=str(folder),
                fix=_FIX,
            )
        table, source_file = _episode_table(folder, info.data_format)
        where = f"{data}/{i}"
        names = set(table.column_names)
        for column in ("observations", "actions", "rewards", "terminations", "truncations"):
            if column not in names:
                raise CorruptInputError(f"no {column} column", subject=where, fix=_FIX)
        obs = table.column("observations").combine_chunks()
        act = table.column("actions").combine_chunks()[:-1]  # padded by one row
        meta_path = folder / METADATA
        meta = read_json_file(meta_path, fix=_FIX) if meta_path.is_file() else {}
        seed = meta.get("seed") if isinstance(meta, dict) else None

        yield RawEpisode(
            id=i,
            observations={
                leaf.path: _leaf_values(obs, leaf, info, where) for leaf in info.observation
            },
            actions={leaf.path: _leaf_values(act, leaf, info, where) for leaf in info.action},
            rewards=_steps(table, "rewards"),
            terminations=_steps(table, "terminations"),
            truncations=_steps(table, "truncations"),
            infos=_infos(table.column("infos").combine_chunks(), where) if "infos" in names else {},
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            options=meta.get("options") if isinstance(meta, dict) else None,
            source_file=source_file,
        )
