"""Progress lines read the same for every source (#43: LeRobot's raw stage printed its asset
name, and 9.7 KB printed as 0.0 MB)."""

from __future__ import annotations

from warehouse_cli.console import _stage_text, size_text


def test_sizes_read_as_people_read_them():
    assert [size_text(n) for n in (0, 999, 9_700, 1_400_000, 2_100_000_000)] == [
        "0 B", "999 B", "9.7 KB", "1.4 MB", "2.1 GB",
    ]  # fmt: skip


def test_every_sources_raw_stage_prints_one_way():
    lines = {
        name: _stage_text(name, meta)
        for name, meta in {
            "atari_replay_files": {"files": 24, "bytes": 1_400_000},
            "openx_shards": {"shards": 2, "bytes": 9_700},
            "lerobot_files": {"files": 1234, "bytes": 52_000_000},
        }.items()
    }
    assert lines == {
        "atari_replay_files": ("raw", "raw 24 files 1.4 MB"),
        "openx_shards": ("raw", "raw 2 shards 9.7 KB"),
        "lerobot_files": ("raw", "raw 1,234 files 52.0 MB"),
    }


def test_the_standardized_stage_prints_its_counts():
    """#48: --through standardized printed the asset's name and no count."""
    meta = {"steps": 1530, "episodes": 12, "dropped_episodes": 0}
    assert _stage_text("openx_standardized", meta) == (
        "standardized", "standardized 1,530 steps 12 episodes")  # fmt: skip
    meta["dropped_episodes"] = 2
    assert _stage_text("lerobot_standardized", meta)[1].endswith("(2 dropped)")
