"""A table declared once as typed Python data: its Arrow schema, its SQL view and its docs are
generated from the declaration (the catalog's tables, the decoded and TED ``episodes.parquet``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Column:
    name: str
    arrow: pa.DataType
    sql: str
    doc: str


@dataclass(frozen=True)
class Table:
    """A view of the catalog: ``folder/<source>/<partition>/file`` Parquet files of every
    partition (one artifact per partition and folder)."""

    name: str
    columns: tuple[Column, ...]
    doc: str
    folder: str = "rows"
    file: str = ""
    depth: int = 2  # names below the folder: <source>/<partition> (scores: <score>/<source>/...)

    @property
    def file_name(self) -> str:
        return self.file or f"{self.name}.parquet"

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow) for c in self.columns])

    @property
    def format_id(self) -> str:
        """``<name>/<hash of the column names and types>``: an input of the stage that writes
        this table, so a changed schema rebuilds every partition's files."""
        schema = ",".join(f"{c.name}:{c.arrow}" for c in self.columns)
        return f"{self.name}/{hashlib.sha256(schema.encode()).hexdigest()[:12]}"

    def view_sql(self, files: str | list[str], name: str = "") -> str:
        """``CREATE VIEW`` over the Parquet files matching a glob, or a list of files (typed,
        ordered columns). A column no file has yet (every file written before the column
        existed) reads as NULL: the files are unioned by name with a row-less relation of every
        column, so a catalog still queries while its partitions are being rebuilt."""
        cols = ",\n  ".join(f'CAST("{c.name}" AS {c.sql}) AS "{c.name}"' for c in self.columns)
        typed = ", ".join(f'CAST(NULL AS {c.sql}) AS "{c.name}"' for c in self.columns)
        source = (
            _literal(files)
            if isinstance(files, str)
            else "[" + ", ".join(_literal(f) for f in files) + "]"
        )
        return (
            f"CREATE OR REPLACE VIEW {name or self.name} AS SELECT\n  {cols}\n"
            f"FROM (SELECT * FROM read_parquet({source}, union_by_name = true)\n"
            f"  UNION ALL BY NAME (SELECT {typed} LIMIT 0))"
        )

    def empty_view_sql(self, name: str = "") -> str:
        """``CREATE VIEW`` of no rows with this table's columns (a catalog that has no files of
        it yet, e.g. one written before the table existed)."""
        cols = ",\n  ".join(f'CAST(NULL AS {c.sql}) AS "{c.name}"' for c in self.columns)
        return f"CREATE OR REPLACE VIEW {name or self.name} AS SELECT\n  {cols}\nLIMIT 0"

    def markdown(self) -> str:
        rows = "\n".join(f"| `{c.name}` | {c.sql} | {c.doc} |" for c in self.columns)
        return (
            f"### `{self.name}`\n{self.doc}\n\n| column | type | meaning |\n|---|---|---|\n{rows}"
        )


def _literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
