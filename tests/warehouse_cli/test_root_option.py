"""``--root`` on the command line is parsed as every other root setting is (#48): a
``gs://bucket/prefix`` given there builds into the bucket, never into a local folder named
``gs:/bucket/prefix`` under the working directory."""

from __future__ import annotations

import pytest

from episode_warehouse.gcs import gcs_client
from episode_warehouse.storage import root_setting
from warehouse_cli.main import main


def test_a_root_setting_has_one_canonical_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert root_setting("gs://bkt/wh/") == "gs://bkt/wh"
    assert root_setting("gs://bkt") == "gs://bkt"
    assert root_setting("wh") == str(tmp_path / "wh")
    from episode_warehouse.errors import ConfigError

    for bad in ("gs:/bkt/wh", "s3://bkt/wh", "gs://", "gs://bkt/../x"):
        with pytest.raises(ConfigError):
            root_setting(bad)


def test_materialize_and_export_with_a_bucket_root_option(
    warehouse_env, gcs_endpoint, tmp_path, monkeypatch, capsys
):
    gcs_client(gcs_endpoint).create_bucket("cli-root-option")
    url = "gs://cli-root-option/wh"
    monkeypatch.setenv("EPISODE_WAREHOUSE_LOCAL_COPY", str(tmp_path / "copy"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["materialize", "openx", "cmu_stretch", "--through", "catalog", "--root", url]) == 0
    query = "SELECT source, partition, episode, start, length FROM episodes LIMIT 2"
    assert main(["export", "two", query, "--root", url]) == 0
    assert "exported two to gs://cli-root-option/wh/lerobot/two" in capsys.readouterr().out
    assert list(work.iterdir()) == []  # no ./gs:/cli-root-option/wh
    assert not warehouse_env.exists()  # nor the environment's root: the option wins
    names = {b.name for b in gcs_client(gcs_endpoint).list_blobs("cli-root-option")}
    assert "wh/ted/openx/cmu_stretch/meta.json" in names
    assert any(n.startswith("wh/lerobot/two/") for n in names)
