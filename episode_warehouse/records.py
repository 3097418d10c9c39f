"""An artifact's record (``meta.json``) as a typed value, checked where it is read.

Every stage's record is one dataclass over :class:`Record`, next to the stage that writes it:

- :class:`RawRecord`, what a source's mirror copied (Atari's and OpenX's layouts extend it in
  ``sources/<name>/record.py``);
- :class:`~episode_warehouse.decoded.record.DecodedRecord`, the decoded episodes;
- :class:`~episode_warehouse.ted.record.TedRecord`, the TED;
- :class:`~episode_warehouse.catalog.records.RowsRecord` and ``StatisticsRecord``;
- :class:`~episode_warehouse.export.record.ExportRecord`, a LeRobot export.

A record is written by the build in its staging folder, extended by the incremental rule with
``inputs`` and ``version``, and read back by the next stage, a reader, or another machine (a
bucket's record is written by anyone who can write the bucket). :meth:`Record.from_json`
checks every declared field's presence and type and names the file and the field that are
wrong; fields a record holds beyond its class's (a source's own, the bucket's ``published``
section) are kept in ``extra`` as they were written.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from episode_warehouse.errors import CorruptInputError, FormatVersionError

RECORD = "meta.json"  # the record of every artifact but a LeRobot export
EXPORT_RECORD = "meta/warehouse_export.json"  # a LeRobot export's (lerobot owns meta/*.json)


@dataclass(frozen=True, kw_only=True)
class Record:
    """The fields every record has: the incremental rule's ``inputs`` and ``version``."""

    FILE: ClassVar[str] = RECORD
    version: str = ""  # fingerprint(inputs), set when the artifact is published
    inputs: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # what the record holds beyond these fields

    @classmethod
    def from_json(cls, data: object, *, subject: str) -> Self:
        """``data`` (a parsed record) as this record type.

        Raises:
            CorruptInputError: not a JSON object, a declared field missing or of another type
                (naming ``subject`` and the field).
        """
        if not isinstance(data, dict):
            raise CorruptInputError(
                "the record is not a JSON object", subject=subject, fix=_fix(cls)
            )
        hints = _declared(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise CorruptInputError(
                        f"the record lacks {f.name!r}", subject=subject, fix=_fix(cls)
                    )
                continue
            value = data[f.name]
            if not _is(value, hints[f.name]):
                wanted = _name(hints[f.name])
                raise CorruptInputError(
                    f"the record's {f.name!r} is {type(value).__name__}, not {wanted}",
                    subject=subject,
                    fix=_fix(cls),
                )
            values[f.name] = value
        names = {f.name for f in dataclasses.fields(cls)}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**values, extra=extra)

    def to_json(self) -> dict:
        """The record as ``meta.json`` holds it (``extra`` first, the declared fields over it)."""
        out = dict(self.extra)
        for f in dataclasses.fields(self):
            if f.name != "extra":
                out[f.name] = getattr(self, f.name)
        return out

    def fields_json(self) -> dict:
        """The declared fields a build writes (without ``inputs``, ``version`` and ``extra``),
        for :func:`~episode_warehouse.incremental.build_if_changed`."""
        out = self.to_json()
        for name in ("version", "inputs"):
            out.pop(name)
        return out


@dataclass(frozen=True, kw_only=True)
class FormatRecord(Record):
    """The record of a folder format that readers check (decoded episodes, TED): the format's
    name and version are the class's, and every record of it holds them."""

    FORMAT: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]
    format: str
    format_version: int

    @classmethod
    def format_id(cls) -> str:
        """``name/vN``: an input of the stage that writes the format (a new version rebuilds)."""
        return f"{cls.FORMAT}/v{cls.FORMAT_VERSION}"

    @classmethod
    def current(cls) -> dict:
        """The ``format`` and ``format_version`` fields a writer of this version writes."""
        return {"format": cls.FORMAT, "format_version": cls.FORMAT_VERSION}

    @classmethod
    def from_json_checked(cls, data: object, *, subject: str, fix: str) -> Self:
        """:meth:`from_json` of a record of this version of the format (checked first: a record
        of another version may lack this version's fields).

        Raises:
            FormatVersionError: written by another version (naming both and ``subject``).
            CorruptInputError: a field missing or of another type.
        """
        found = (data.get("format"), data.get("format_version")) if isinstance(data, dict) else ()
        if found != (cls.FORMAT, cls.FORMAT_VERSION):
            name, version = (*found, None, None)[:2]
            raise FormatVersionError(
                f"format {name} v{version} is not {cls.FORMAT} v{cls.FORMAT_VERSION}",
                subject=subject,
                fix=fix,
            )
        return cls.from_json(data, subject=subject)


@dataclass(frozen=True, kw_only=True)
class RawRecord(Record):
    """A raw record (``raw/<source>/<partition>/meta.json``): where the files came from and
    which were mirrored. A LeRobot dataset's record is this one; Atari's and OpenX's add their
    layout's fields (``sources/<name>/record.py``).

    ``files``: file name -> what the source listed and the copy was checked against (size,
    generation or version, crc32c); empty when the stage only lists the source (streaming).
    ``revision``: the source's commit or dataset version, where it has one. ``license``: the
    license the source declares (a LeRobot dataset's card), carried to what is published.
    """

    format: str
    source_url: str
    files: dict[str, dict] = field(default_factory=dict)
    mode: str = "download"
    revision: str | None = None
    license: str | None = None


def _declared(cls: type) -> dict[str, Any]:
    """The field types of a record class (resolved once: annotations are strings here)."""
    return _hints_of(cls)


@functools.cache
def _hints_of(cls: Hashable) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fix(cls: type) -> str:
    return f"re-materialize this artifact (its record is not a {cls.__name__})"


def _is(value: object, hint: object) -> bool:
    """Whether ``value`` (parsed JSON) is of ``hint``: int, float, str, bool, dict, list,
    ``X | None``, or ``dict[str, ...]`` / ``list[...]`` (checked one level deep)."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_is(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_is(v, item) for v in value)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # Any


def _name(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
