"""Plain-text tables for the terminal."""

from __future__ import annotations


def print_table(columns: list[str], rows: list[tuple], limit: int = 50) -> None:
    """Print ``rows`` (at most ``limit``) under ``columns``; more rows than that are announced
    (the caller fetches ``limit + 1`` to know), not counted."""
    shown = [[("" if v is None else str(v)) for v in row] for row in rows[:limit]]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in shown:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    if len(rows) > len(shown):
        print(f"... more rows (the first {len(shown)} shown; use LIMIT or --limit N)")
    else:
        print(f"({len(rows)} rows)")
