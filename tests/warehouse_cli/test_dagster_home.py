"""One Dagster instance per warehouse root (#43): after materializing into another root, the
demo's UI showed that root's Asterix/2 (554 frames) as the demo's (820)."""

from __future__ import annotations

import pytest

from episode_warehouse.errors import ConfigError
from warehouse_cli import environment


def test_each_root_gets_its_own_instance_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setattr(environment, "PROJECT_ROOT", tmp_path / "project")
    demo = environment.default_dagster_home(tmp_path / "demo-data" / "warehouse")
    other = environment.default_dagster_home(tmp_path / "elsewhere")
    bucket = environment.default_dagster_home("gs://b/wh")
    assert len({demo, other, bucket}) == 3
    assert all(h.parent == tmp_path / "project" / ".dagster_home" for h in (demo, other, bucket))
    assert demo.name.startswith("warehouse-") and (demo / "dagster.yaml").is_file()
    assert environment.default_dagster_home(tmp_path / "demo-data" / "warehouse") == demo
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "elsewhere"))
    assert environment.default_dagster_home() == other  # the root from the environment


def test_an_explicit_dagster_home_serves_one_root_and_refuses_another(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert environment.default_dagster_home(tmp_path / "a") == tmp_path / "home"
    assert environment.default_dagster_home(tmp_path / "b") == tmp_path / "home"  # nothing built
    environment.bind_dagster_home(tmp_path / "a")  # after a run built in a
    assert environment.default_dagster_home(tmp_path / "a") == tmp_path / "home"
    with pytest.raises(ConfigError, match="holds the runs of the warehouse root .*/a, not of"):
        environment.default_dagster_home(tmp_path / "b")
