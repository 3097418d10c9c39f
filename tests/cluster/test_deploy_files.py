"""The deployment files hold no password and publish the UI on this host only: Compose takes
the passwords from the operator's deploy/.env (refusing to start without them), the Helm chart
from a secret the operator creates, and Redis reads its password from a file, not argv."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
_REQUIRED = re.compile(r"\$\{(\w+):\?[^}]+\}")


def _walk(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")
    else:
        yield path, node


def test_compose_takes_every_secret_from_the_operator():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    secrets = {}
    for path, value in _walk(compose):
        if re.search(r"PASSWORD|_URL$", path.rsplit(".", 1)[-1]) and isinstance(value, str):
            secrets[path] = value
    assert len(secrets) >= 5, secrets
    for path, value in secrets.items():
        if "redis://" in value or "PASSWORD" in path:
            names = _REQUIRED.findall(value)
            assert names and set(names) <= {"DAGSTER_PG_PASSWORD", "REDIS_PASSWORD"}, path
            assert "@" not in value or value.startswith("redis://:${"), path
    redis = compose["services"]["redis"]
    assert "requirepass" in redis["command"][-1] and "/tmp/redis.conf" in redis["command"][-1]
    assert "--requirepass" not in " ".join(redis["command"])  # not on the command line
    postgres = compose["services"]["postgres"]["environment"]
    assert "scram-sha-256" in postgres["POSTGRES_INITDB_ARGS"]
    assert "POSTGRES_HOST_AUTH_METHOD" not in postgres  # the image's way to say trust
    example = (DEPLOY / ".env.example").read_text()
    assert re.search(r"^DAGSTER_PG_PASSWORD=$", example, re.M)
    assert re.search(r"^REDIS_PASSWORD=$", example, re.M)


def test_compose_publishes_ports_on_this_host_only():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    published = [p for s in compose["services"].values() for p in s.get("ports", [])]
    assert published, "the UI is published"
    for port in published:
        assert str(port).startswith("127.0.0.1:"), port


def test_the_helm_values_hold_no_password_and_keep_the_ui_internal():
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    assert values["generatePostgresqlPasswordSecret"] is False  # the chart's default is "test"
    assert values["global"]["postgresqlSecretName"]
    keys = [p.rsplit(".", 1)[-1] for p, _ in _walk(values)]
    assert not [k for k in keys if k.lower().endswith(("password", "passwd"))], keys
    assert values["dagsterWebserver"]["service"]["type"] == "ClusterIP"
    assert values["dagsterWebserver"]["enableReadOnly"] is True


def test_the_instance_files_read_passwords_from_the_environment():
    from warehouse_cli.cluster.instance import ClusterConfig, dagster_yaml

    for text in ((DEPLOY / "dagster.yaml").read_text(), dagster_yaml(ClusterConfig(1, 2))):
        instance = yaml.safe_load(text)
        assert instance["storage"]["postgres"]["postgres_db"]["password"] == {
            "env": "DAGSTER_PG_PASSWORD"
        }
        launcher = instance["run_launcher"]["config"]
        assert launcher["broker"] == {"env": "WAREHOUSE_BROKER_URL"}
        assert launcher["backend"] == {"env": "WAREHOUSE_BACKEND_URL"}


def test_every_daemon_keeps_a_backfill_while_its_code_location_reloads():
    """The local cluster's daemon, Compose's and Helm's get the same environment (a backfill
    submitted while the daemon reloads the location is skipped then, not failed for good)."""
    from warehouse_cli.cluster.instance import DAEMON_ENV

    ((name, value),) = DAEMON_ENV.items()
    assert name == "DAGSTER_BACKFILL_RETRY_DEFINITION_CHANGED_ERROR" and value
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    daemon = compose["services"]["daemon"]["environment"]
    assert daemon[name] == value
    assert (
        daemon["DAGSTER_PG_PASSWORD"]
        == compose["services"]["worker"]["environment"]["DAGSTER_PG_PASSWORD"]
    )  # the shared environment is kept, not replaced
    helm = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    assert {"name": name, "value": value} in helm["dagsterDaemon"]["env"]
