"""Which partitions a query's derived columns were not computed for, as the episodes are now.

The ``episodes`` view's curation columns are joined from tables other stages compute (the
duplicates, each score), each row keyed by the ``content_hash`` of the episode it was computed
from: a row of an episode rebuilt since, or naming a kept episode dropped since, is ignored
(``near_duplicate_of`` reads ``'unchecked'``, a score NULL). A query that names such a column
runs as it is, and the partitions where the column is not current are named in a warning, with
the command that computes it (:func:`freshness_checks`, run by ``run_query`` in the same
sandboxed connection).
"""

from __future__ import annotations

import re

from episode_warehouse.catalog.schema import SCORES, UNCHECKED
from episode_warehouse.curation.scores import SCORE_NAME

DUPLICATE_COLUMNS = ("near_duplicate_of", "duplicate_group")
_SCORE_COLUMN = re.compile(r"\bscore_([a-z][a-z0-9_]{0,39})\b")
_LISTED = 20  # partitions a warning names


def freshness_checks(sql: str) -> list[tuple[str, str]]:
    """``(column, query)`` for each derived column ``sql`` names: the query lists the
    partitions (``source:partition``) where the column is not current for some episode."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    checks = []
    if words & set(DUPLICATE_COLUMNS):
        checks.append((
            "near_duplicate_of",
            "SELECT DISTINCT source || ':' || partition FROM episodes "
            f"WHERE near_duplicate_of = '{UNCHECKED}' ORDER BY 1 LIMIT {_LISTED + 1}",
        ))  # fmt: skip
    for name in sorted(set(_SCORE_COLUMN.findall(sql))):
        if not SCORE_NAME.match(name):
            continue
        checks.append((
            f"score_{name}",
            "SELECT DISTINCT r.source || ':' || r.partition FROM episode_rows r WHERE NOT EXISTS "
            f"(SELECT 1 FROM {SCORES.name} s WHERE s.score = '{name}' AND s.source = r.source "
            "AND s.partition = r.partition AND s.episode = r.episode "
            f"AND s.content_hash = r.content_hash) ORDER BY 1 LIMIT {_LISTED + 1}",
        ))  # fmt: skip
    return checks


def freshness_warning(column: str, partitions: list[str]) -> str:
    """The warning for a column not current in ``partitions``."""
    named = ", ".join(partitions[:_LISTED]) + (" and more" if len(partitions) > _LISTED else "")
    return (
        f"the query reads {column}, which is not computed for the episodes of {named} as they "
        "are now (new or rebuilt since, or their kept duplicate was dropped): "
        f"{'they read ' + repr(UNCHECKED) if column == 'near_duplicate_of' else 'they read NULL'}"
        "; run 'warehouse curate' (or wait for the curation schedule)"
    )
