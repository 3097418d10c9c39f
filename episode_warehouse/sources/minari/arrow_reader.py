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

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.guards.json_input import read_json_file
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.limits import LIMITS_FIX, InputLimits
from episode_warehouse.sources.minari.episode import RawEpisode
from episode_warehouse.sources.minari.images import decode_frames
from episode_warehouse.sources.minari.metadata import METADATA, DatasetInfo
from episode_warehouse.sources.minari.spaces import Leaf

_FIX = "the dataset is malformed: download it again, or write it again with Minari"
MAX_INFO_LEAVES = 256


_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}


def _parquet_declared(path: Path) -> tuple[int, int]:
    """(rows, bytes the decoded columns will take) from a Parquet file's footer alone: each
    column chunk's value count times its width (run-length and dictionary encodings make a
    few KB of file declare GBs of values), byte arrays by their uncompressed size."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    nbytes = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            width = _WIDTH.get(column.physical_type)
            nbytes += (column.num_values * width if width is not None
                       else column.total_uncompressed_size + 4 * column.num_values)  # fmt: skip
    return meta.num_rows, nbytes


def _check_declared(rows: int, nbytes: int, path: Path, limits: InputLimits) -> None:
    budget = limits.decoded_budget(path.stat().st_size)
    if rows > limits.max_steps + 1:
        raise LimitExceededError(
            f"an episode file of {rows:,} rows, over the limit of {limits.max_steps:,} steps",
            subject=str(path),
            fix=LIMITS_FIX,
        )
    if nbytes > budget:
        raise LimitExceededError(
            f"the file declares {nbytes:,} bytes of values, over the {budget:,} a file of "
            f"{path.stat().st_size:,} bytes may expand to",
            subject=str(path),
            fix=LIMITS_FIX,
        )


def _read_table(path: Path, data_format: str, limits: InputLimits) -> pa.Table:
    """The file's table, its declared size checked against ``limits`` before it is read (a
    Parquet footer's counts; an IPC file is memory-mapped, so its uncompressed buffers cost no
    memory, and its row count is checked batch by batch), and its buffers validated
    (``validate(full=True)``: offsets and lengths inside their buffers) before any value is
    read: an IPC file is not checked on reading, and a damaged offset would make pyarrow read
    outside its buffer."""
    try:
        if data_format == "parquet":
            import pyarrow.parquet as pq

            _check_declared(*_parquet_declared(path), path, limits)
            table = pq.read_table(path)
        else:
            with pa.memory_map(str(path)) as source:
                reader = pa.ipc.open_file(source)
                batches, rows, nbytes = [], 0, 0
                for b in range(reader.num_record_batches):
                    batches.append(reader.get_batch(b))
                    rows, nbytes = rows + batches[-1].num_rows, nbytes + batches[-1].nbytes
                    _check_declared(rows, nbytes, path, limits)
                table = pa.Table.from_batches(batches, schema=reader.schema)
        table.validate(full=True)
        return table
    except (OSError, pa.ArrowInvalid, pa.ArrowException) as exc:
        raise CorruptInputError(
            f"not a readable {data_format} file ({exc})", subject=str(path), fix=_FIX
        ) from None


def _episode_table(folder: Path, data_format: str, limits: InputLimits) -> tuple[pa.Table, str]:
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(("_", ".")) and p.name != METADATA
    )
    if not files:
        raise CorruptInputError("no data file for this episode", subject=str(folder), fix=_FIX)
    tables = [_read_table(p, data_format, limits) for p in files]
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


def arrow_episodes(info: DatasetInfo, limits: InputLimits | None = None) -> Iterator[RawEpisode]:
    """The dataset's episodes in id order, one table in memory at a time.

    Raises:
        CorruptInputError: an episode folder missing, a file unreadable, a column missing.
        LimitExceededError: a file declaring more steps or bytes than ``limits`` allow.
    """
    limits = limits or InputLimits()
    data = Path(info.data_dir)
    # counted first: total_episodes is not trusted (10M of them named before a refusal)
    folders = {p.name for p in data.iterdir() if p.is_dir() and p.name.isdigit()}
    if len(folders) != info.total_episodes:
        missing = next((i for i in range(len(folders) + 1) if str(i) not in folders), None)
        raise CorruptInputError(
            f"no folder for episode {missing} of the metadata's {info.total_episodes:,}"
            if missing is not None and missing < info.total_episodes
            else f"{len(folders):,} episode folders for the metadata's "
            f"{info.total_episodes:,} episodes",
            subject=str(data / str(missing)),
            fix=_FIX,
        )
    for i in range(info.total_episodes):
        folder = data / str(i)
        if not folder.is_dir() or folder.is_symlink():
            raise CorruptInputError(
                f"no folder for episode {i} of the metadata's {info.total_episodes}",
                subject=str(folder),
                fix=_FIX,
            )
        table, source_file = _episode_table(folder, info.data_format, limits)
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
