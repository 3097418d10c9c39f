"""The generic stages after the decoded one, one module each (the TED, the catalog rows), each
one call of the incremental rule; every source's raw and decoded stages live in its folder
(``sources/<name>/mirror.py``, ``sources/<name>/stage.py``, the latter over
:mod:`~episode_warehouse.decoded.stage`), the standardized stage in
:mod:`episode_warehouse.standardized.stage`, statistics in :mod:`episode_warehouse.catalog.
statistics`.

Every stage function reads its upstream artifact's record (a clear error when it is missing),
states the stage's inputs (the upstream ``version`` and the code version), and calls
:func:`~episode_warehouse.incremental.build_if_changed`. The Dagster assets call exactly one of
these per materialization and return the result's ``version`` as their data version.

    raw (sources/<name>) -> decoded (sources/<name>) -> ted -> catalog rows -> (LeRobot exports)
"""

from episode_warehouse.stages.catalog import publish_catalog_rows
from episode_warehouse.stages.ted import build_ted_stage

__all__ = ["build_ted_stage", "publish_catalog_rows"]
