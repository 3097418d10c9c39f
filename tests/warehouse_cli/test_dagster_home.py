"""One Dagster instance per warehouse root (#43): after materializing into another root, the
demo's UI showed that root's Asterix/2 (554 frames) as the demo's (820)."""

from __future__ import annotations

import json
import os

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus

from episode_warehouse.errors import ConfigError
from warehouse_cli import environment


def test_each_root_gets_its_own_instance_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setattr(environment, "PROJECT_ROOT", tmp_path / "project")
    demo = environment.default_dagster_home(tmp_path / "demo-data" / "warehouse")
    other = environment.default_dagster_home(tmp_path / "elsewhere")
    bucket = environment.default_dagster_home("gs://bkt/wh")
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


def _first_run(home: str, root: str, barrier, results) -> None:
    """A CLI's first steps in a fresh process: its instance for ``root`` (created and bound),
    then a run recorded in it."""
    os.environ["DAGSTER_HOME"] = home
    barrier.wait()
    try:
        instance = environment.cli_instance(root)
        instance.add_run(DagsterRun(job_name="__ASSET_JOB", status=DagsterRunStatus.SUCCESS))
        results.put((root, "ok"))
    except ConfigError as exc:
        results.put((root, f"refused: {exc}"))
    except Exception as exc:  # noqa: BLE001 - what the test reports (SQLite's errors were seen)
        results.put((root, f"{type(exc).__name__}: {exc}"))


@pytest.mark.integration  # processes started together on one fresh DAGSTER_HOME
@pytest.mark.parametrize("roots", [
    pytest.param(("a", "b", "c"), id="three", marks=pytest.mark.slow(
        reason="three CLI runs, ~12 s: the same race on one home as 'same' (which stays in the "
        "default tier), over three roots")),
    pytest.param(("a", "a", "a"), id="same"),
])  # fmt: skip
def test_first_runs_at_once_on_a_fresh_shared_home(tmp_path, roots):
    """#48: two first runs on one fresh shared DAGSTER_HOME (two roots) gave three outcomes in
    three tries (a run blocked, 'table alembic_version already exists', a refusal). Creating
    and binding an instance is one step: one root binds it, the others are refused; runs of
    one root all use it. Whichever process wins, the outcome is the same."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    for attempt in range(3):
        home = tmp_path / f"home{attempt}"
        barrier, results = ctx.Barrier(len(roots)), ctx.Queue()
        procs = [ctx.Process(target=_first_run, args=(str(home), str(tmp_path / r), barrier,
                                                        results)) for r in roots]  # fmt: skip
        for p in procs:
            p.start()
        got = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        ok = [root for root, outcome in got if outcome == "ok"]
        others = [outcome for _, outcome in got if outcome != "ok"]
        if len(set(roots)) == 1:
            assert others == [] and len(ok) == len(roots), got
        else:
            assert len(ok) == 1 and all("holds the runs of the warehouse root" in o
                                        for o in others), got  # fmt: skip
        bound = json.loads((home / environment.ROOT_MARK).read_text())["root"]
        assert bound == ok[0]
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert len(instance.get_runs()) == len(ok)  # runs of the bound root only
