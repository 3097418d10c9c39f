"""Read the episodes of one OpenX tar shard: ``<key>.data.pickle`` members, nothing else.

The shard is read with the standard library's ``tarfile`` as a stream (local file or ``hf://``
URL alike), member by member. Only regular files named ``<key>.data.pickle`` are read, and each
is checked before its bytes are: links (symbolic or hard), other member types, other extensions
(``.pth``, ``.mp``, ``.data.pickle.gz``: never unpacked or handed to a decoder), hidden names
(``.x``, ``__x``), paths that climb out of the archive, duplicate keys and members larger than
the limit are refused, naming the shard and the member.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.limits import InputLimits
from episode_warehouse.sources.openx.shards import Shard, open_shard

PICKLE_SUFFIX = ".data.pickle"
_REMOVE = "the shard is not a clean OpenX WebDataset tar; remove the member or the shard"


def check_complete(shard: Shard) -> None:
    """A tar ends with two zero blocks and is a whole number of 512-byte blocks; a shard cut at
    a member boundary would otherwise read as a shorter, valid archive.

    Raises:
        CorruptInputError: the shard is truncated.
    """
    with open_shard(shard.location) as fh:
        size = fh.seek(0, 2)
        tail = b""
        if size >= 1024:
            fh.seek(size - 1024)
            tail = fh.read(1024)
    if size % 512 or len(tail) < 1024 or tail.count(0) != 1024:
        raise CorruptInputError(
            f"the tar shard is truncated ({size} bytes, no end-of-archive marker)",
            subject=shard.location,
            fix="re-download the shard",
        )


def _check_member(member: tarfile.TarInfo, subject: str, limits: InputLimits) -> str:
    """The episode key of an acceptable member; raises for anything else."""
    name = member.name
    if member.issym() or member.islnk():
        kind = "symbolic" if member.issym() else "hard"
        raise CorruptInputError(
            f"member is a {kind} link (to {member.linkname!r}); links are refused",
            subject=subject,
            fix=_REMOVE,
        )
    if not member.isfile():
        raise CorruptInputError(
            "member is not a regular file (device, fifo or other)", subject=subject, fix=_REMOVE
        )
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or "\\" in name:
        raise CorruptInputError(
            f"member path {name!r} is absolute or climbs out of the archive",
            subject=subject,
            fix=_REMOVE,
        )
    base = parts[-1]
    if base.startswith((".", "__")):
        raise CorruptInputError(
            f"hidden member name {base!r} (starts with '.' or '__')",
            subject=subject,
            fix="rename it to <key>.data.pickle or remove it",
        )
    if not name.endswith(PICKLE_SUFFIX) or len(base) == len(PICKLE_SUFFIX):
        raise CorruptInputError(
            "unexpected member: only <key>.data.pickle members are read (it was not unpacked "
            "or decoded)",
            subject=subject,
            fix=_REMOVE,
        )
    if member.size > limits.max_member_bytes:
        raise LimitExceededError(
            f"member of {member.size} bytes is over the limit of {limits.max_member_bytes}",
            subject=subject,
            fix="raise max_member_bytes (EPISODE_WAREHOUSE_LIMITS) if the shard is trusted",
        )
    return name[: -len(PICKLE_SUFFIX)]


def iter_members(shard: Shard, limits: InputLimits | None = None) -> Iterator[tuple[str, bytes]]:
    """Yield ``(key, pickle bytes)`` for each episode of one shard, streaming.

    Raises:
        CorruptInputError: a truncated or malformed tar, or a member that is refused (see the
            module docstring).
        LimitExceededError: a member over ``limits.max_member_bytes``.
    """
    limits = limits or InputLimits()
    check_complete(shard)
    seen: set[str] = set()
    try:
        with open_shard(shard.location) as fh, tarfile.open(fileobj=fh, mode="r|") as tar:
            for member in tar:
                subject = f"{shard.name}:{member.name}"
                if member.isdir():
                    continue
                key = _check_member(member, subject, limits)
                if key in seen:
                    raise CorruptInputError(
                        f"a second member with the key {key!r}: one episode would replace another",
                        subject=subject,
                        fix="give every episode its own key",
                    )
                seen.add(key)
                data = tar.extractfile(member)
                if data is None:
                    raise CorruptInputError("member has no data", subject=subject, fix=_REMOVE)
                yield key, data.read()
    except (tarfile.TarError, EOFError) as exc:
        raise CorruptInputError(
            f"cannot read the tar shard ({type(exc).__name__}: {exc})",
            subject=shard.location,
            fix="re-download the shard; it is truncated or not a tar",
        ) from exc
