"""The episode warehouse's domain package: formats, decoders, TED, catalog, loaders.

It never imports Dagster; the Dagster assets in ``assets/`` wire these functions together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episode_warehouse.ted.open import open_ted

__all__ = ["open_ted"]


def __getattr__(name: str):
    # Lazy: importing the package stays cheap for worker processes that only need numpy.
    if name == "open_ted":
        from episode_warehouse.ted.open import open_ted

        return open_ted
    raise AttributeError(name)
