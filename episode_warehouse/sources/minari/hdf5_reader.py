"""Episodes of a Minari ``hdf5`` dataset: ``data/main_data.hdf5``, a group ``episode_<id>`` per
episode (Minari's ``HDF5Storage``), read one episode at a time with h5py.

In an episode group: ``observations`` and ``actions`` (a dataset, or for a Dict space a group
of its keys and for a Tuple one of ``_index_<i>``), ``rewards``, ``terminations``,
``truncations``, ``infos`` (a group, nested), and attributes ``id``, ``seed``,
``total_steps``, ``options/...``. An image leaf is JPEG bytes per frame when the dataset was
written with ``jpeg_encoding`` (rows of bytes), else the frames themselves.

The file is not trusted: links (soft or external) anywhere in it, the file's top level
included, virtual datasets and external storage are refused before anything is read, so nothing
outside the file is ever opened and no group is read twice under two names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.guards.names import checked_segment
from episode_warehouse.limits import LIMITS_FIX, InputLimits
from episode_warehouse.sources.minari.episode import RawEpisode
from episode_warehouse.sources.minari.images import decode_frames
from episode_warehouse.sources.minari.metadata import DatasetInfo
from episode_warehouse.sources.minari.spaces import Leaf

MAIN_FILE = "main_data.hdf5"
_FIX = "the dataset is malformed: download it again, or write it again with Minari"
MAX_INFO_LEAVES = 256


def _checked(group, where: str) -> None:
    """Refuse soft and external links anywhere below ``group`` (the links are listed, not
    followed)."""
    import h5py

    found: list[tuple[str, object]] = []

    def visit(name: str, link) -> bool | None:
        if isinstance(link, h5py.HardLink):
            return None
        found.append((name, link))
        return True  # stops the visit (an exception cannot cross h5py's callback)

    group.visititems_links(visit)
    if found:
        name, link = found[0]
        kind = "an external link" if isinstance(link, h5py.ExternalLink) else "a soft link"
        raise CorruptInputError(
            f"{group.name.rstrip('/')}/{name} is {kind}: a Minari file holds its own data",
            subject=where,
            fix="refusing to follow it; " + _FIX,
        )


def _own_data(dataset, where: str):
    """``dataset``, refused when its data lives in other files (virtual or external)."""
    if dataset.is_virtual or dataset.external:
        raise CorruptInputError(
            f"{dataset.name} is a {'virtual' if dataset.is_virtual else 'external'} dataset: "
            "its data is in other files",
            subject=where,
            fix="refusing to read it; " + _FIX,
        )
    return dataset


def _node(group, path: tuple[str, ...], where: str):
    """The dataset at a leaf's space path (a Tuple's member ``"1"`` is ``_index_1`` here)."""
    node = group
    for part in path:
        name = f"_index_{part}" if part.isdigit() and f"_index_{part}" in node else part
        if name not in node:
            raise CorruptInputError(
                f"no {node.name}/{name} (the space declares it)", subject=where, fix=_FIX
            )
        node = node[name]
    return node


def _read_leaf(node, leaf: Leaf, info: DatasetInfo, where: str):
    import h5py

    if not isinstance(node, h5py.Dataset):
        raise CorruptInputError(
            f"{node.name} is a group where the space has one array", subject=where, fix=_FIX
        )
    _own_data(node, where)
    if leaf.kind == "text":
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in node[()]]
    if leaf.image and info.jpeg_encoding and node.ndim != 1 + len(leaf.shape):
        rows = node[()]  # one row of bytes per frame (vlen, or a 2-D array when equal length)
        return decode_frames(
            [np.asarray(r, dtype=np.uint8).tobytes() for r in rows], leaf, f"{where} {node.name}"
        )
    return node[()]


def _check_declared_sizes(group, i: int, limits: InputLimits, budget: int, where: str) -> None:
    """Refuse episode ``i`` when a dataset in it declares more rows than an episode may have
    or more bytes than the file may expand to, from the declared shapes (h5py reads nothing:
    an unwritten chunked dataset of 250M values costs a few bytes of file)."""
    import h5py

    found: list[str] = []

    def visit(name: str, item) -> bool | None:
        if not isinstance(item, h5py.Dataset):
            return None
        rows = item.shape[0] if item.shape else 1
        nbytes = int(np.prod(item.shape, dtype=np.int64)) * item.dtype.itemsize
        if rows > limits.max_steps + 1:
            found.append(f"episode_{i}/{name} declares {rows:,} rows, over the limit of "
                         f"{limits.max_steps:,} steps per episode")  # fmt: skip
        elif nbytes > budget:
            found.append(f"episode_{i}/{name} declares {nbytes:,} bytes, over the "
                         f"{budget:,} this file may expand to")  # fmt: skip
        return True if found else None

    group.visititems(visit)
    if found:
        raise LimitExceededError(found[0], subject=where, fix=LIMITS_FIX)


def _episode_number(name: str, total: int) -> int | None:
    """``i`` for a group named ``episode_<i>`` with ``0 <= i < total`` (digits only)."""
    digits = name.removeprefix("episode_")
    if digits == name or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
        return None
    return int(digits) if int(digits) < total else None


def hdf5_episodes(info: DatasetInfo, limits: InputLimits | None = None) -> Iterator[RawEpisode]:
    """The dataset's episodes in id order.

    Raises:
        CorruptInputError: not an HDF5 file h5py can read, a group missing or extra, a link or
            external data, a leaf missing (h5py's own errors on a damaged file included).
        LimitExceededError: a dataset declaring more steps or bytes than ``limits`` allow
            (checked before it is read).
    """
    import h5py

    limits = limits or InputLimits()
    path = Path(info.data_dir) / MAIN_FILE
    where = str(path)
    budget = limits.decoded_budget(path.stat().st_size) if path.is_file() else 0
    try:
        file = h5py.File(path, "r", locking=False)
    except OSError as exc:
        raise _damaged(exc, where) from None
    with file:
        try:
            _checked(file, where)  # every entry, the top level's too, before any is opened
            names = list(file.keys())
        except _H5_ERRORS as exc:
            raise _damaged(exc, where) from None
        # compared by count and by name, never by building the metadata's names (its
        # total_episodes is not trusted: 10M names cost GBs before a refusal)
        odd = [n for n in names if _episode_number(n, info.total_episodes) is None][:3]
        if len(names) != info.total_episodes or odd:
            raise CorruptInputError(
                f"the file's {len(names):,} episode groups differ from the metadata's "
                f"{info.total_episodes:,} episodes" + (f" (e.g. {', '.join(odd)})" if odd else ""),
                subject=where,
                fix=_FIX,
            )
        for i in range(info.total_episodes):
            try:
                group = file[f"episode_{i}"]
                if isinstance(group, h5py.Group):
                    _check_declared_sizes(group, i, limits, budget, where)
                episode = _episode(group, i, info, where)
            except _H5_ERRORS as exc:
                raise _damaged(exc, f"{where} episode_{i}") from None
            yield episode


# what h5py raises on a damaged file (a bad address, a missing signature, an unreadable type)
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


def _damaged(exc: BaseException, where: str) -> CorruptInputError:
    return CorruptInputError(f"the HDF5 file cannot be read ({exc})", subject=where, fix=_FIX)


def _episode(group, i: int, info: DatasetInfo, where: str) -> RawEpisode:
    """Episode ``i`` from its group, after its links and datasets are checked."""
    import h5py

    if not isinstance(group, h5py.Group):
        raise CorruptInputError(f"episode_{i} is not a group", subject=where, fix=_FIX)
    obs_root = group.get("observations")
    act_root = group.get("actions")
    if obs_root is None or act_root is None:
        raise CorruptInputError(
            f"episode_{i} has no observations or actions", subject=where, fix=_FIX
        )
    flags = {}
    for name in ("rewards", "terminations", "truncations"):
        if not isinstance(group.get(name), h5py.Dataset):
            raise CorruptInputError(f"episode_{i} has no {name}", subject=where, fix=_FIX)
        flags[name] = np.asarray(_own_data(group[name], where)[()])
        if flags[name].ndim != 1:
            raise CorruptInputError(
                f"episode_{i}/{name} has shape {flags[name].shape}, not one value per step",
                subject=where,
                fix=_FIX,
            )
    seed = group.attrs.get("seed")
    infos = group.get("infos")
    return RawEpisode(
        id=i,
        observations={
            leaf.path: _read_leaf(_node(obs_root, leaf.path, where), leaf, info, where)
            for leaf in info.observation
        },
        actions={
            leaf.path: _read_leaf(_node(act_root, leaf.path, where), leaf, info, where)
            for leaf in info.action
        },
        rewards=flags["rewards"],
        terminations=flags["terminations"],
        truncations=flags["truncations"],
        infos=_infos(infos, where) if isinstance(infos, h5py.Group) else {},
        seed=int(seed) if isinstance(seed, int | np.integer) else None,
        source_file=f"data/{MAIN_FILE}",
    )


def _infos(group, where: str, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], np.ndarray]:
    """The numeric arrays below ``infos``, by path (strings and objects are left out)."""
    import h5py

    out: dict[tuple[str, ...], np.ndarray] = {}
    for name, item in group.items():
        if len(out) >= MAX_INFO_LEAVES:
            break
        checked_segment(name, subject=where, what="info name")  # it names a decoded file
        if isinstance(item, h5py.Group):
            out.update(_infos(item, where, (*prefix, name)))
        elif item.dtype.kind in "biuf" and item.ndim >= 1:
            out[(*prefix, name)] = _own_data(item, where)[()]
    return out
