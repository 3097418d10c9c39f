"""The viewer answers loopback hosts (and configured names) only, and its API to its own pages
only (#48): with a rebinding name pointed at 127.0.0.1 a foreign origin read the root path,
the catalog rows and frames."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.viewer.app import build_app

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _client(tmp_path, host: str, hosts=None) -> TestClient:
    app = build_app(LocalRoot(tmp_path / "wh"), hosts=hosts)
    return TestClient(app, base_url=f"http://{host}")


@pytest.mark.parametrize("host", ["127.0.0.1:8787", "localhost:8787", "[::1]:8787", "127.0.0.1"])
def test_loopback_hosts_are_answered(tmp_path, host):
    answer = _client(tmp_path, host).get("/api/info")
    assert answer.status_code == 200 and answer.json()["root"] == str(tmp_path / "wh")


@pytest.mark.parametrize("host", ["rebind.attacker.example:8787", "127.0.0.1.nip.io", "10.0.0.5"])
def test_any_other_host_is_refused(tmp_path, host):
    client = _client(tmp_path, host)
    for path in ("/api/info", "/api/episodes", "/", "/static/viewer.js"):
        answer = client.get(path)
        assert answer.status_code == 400, path
        assert str(tmp_path) not in answer.text


def test_a_configured_name_is_answered(tmp_path, monkeypatch):
    assert _client(tmp_path, "viewer.lab:8787", hosts=["viewer.lab"]).get("/api/info").is_success
    monkeypatch.setenv("EPISODE_WAREHOUSE_VIEWER_HOSTS", "viewer.lab, other.lab")
    assert _client(tmp_path, "other.lab").get("/api/info").is_success


def test_cross_origin_api_requests_are_refused(tmp_path):
    client = _client(tmp_path, "127.0.0.1:8787")
    own = client.get("/api/info", headers={"Origin": "http://127.0.0.1:8787",
                                           "Sec-Fetch-Site": "same-origin"})  # fmt: skip
    assert own.status_code == 200
    for headers in ({"Origin": "http://attacker.example"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": "null"}):  # fmt: skip
        answer = client.get("/api/info", headers=headers)
        assert answer.status_code == 403, headers
        assert str(tmp_path) not in answer.text
    assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200  # a link
