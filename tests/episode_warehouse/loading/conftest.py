"""Two Atari partitions built with the domain functions (no Dagster)."""

import pytest

from tests.helpers import build_atari


@pytest.fixture(scope="session")
def warehouse_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("loading") / "wh"
    build_atari(root, "Pong/1", 1)
    build_atari(root, "Pong/2", 2)
    return root
