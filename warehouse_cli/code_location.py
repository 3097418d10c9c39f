"""The code location the CLI runs: ``definitions.py`` of the project, as ``workspace.yaml`` says.

The Dagster wiring (``assets/``, ``resources/``, ``sensors/``) lives in the project checkout, not
in site-packages; the CLI puts the checkout on ``sys.path`` and imports the same ``defs`` the
Dagster UI and daemon load, so there is one Definitions object, not two.
"""

from __future__ import annotations

import sys

from warehouse_cli.environment import PROJECT_ROOT


def load_defs():
    """The project's ``definitions.defs``."""
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    from definitions import defs

    return defs
