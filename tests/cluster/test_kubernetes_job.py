"""The Kubernetes deployment (deploy/helm/values.yaml) renders a run's Job offline with
dagster-k8s itself: image, per-source resources, environment and command."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.code_pointer import FileCodePointer
from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin
from dagster_k8s import K8sRunLauncher

from warehouse_cli.cluster.backfill import PARTITION_TAG
from warehouse_cli.cluster.instance import SOURCE_TAG
from warehouse_cli.cluster.kubernetes import k8s_tags, render_run_job, source_pod

DEPLOY = Path(__file__).parents[2] / "deploy"
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _launcher(values: dict, tmp_path: Path) -> K8sRunLauncher:
    """The launcher the chart configures from ``values`` (its runLauncher section)."""
    config = values["runLauncher"]["config"]["k8sRunLauncher"]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    run_config = config["runK8sConfig"]
    return K8sRunLauncher(
        service_account_name="dagster",
        instance_config_map="dagster-instance",
        postgres_password_secret=values["global"]["postgresqlSecretName"],
        dagster_home="/opt/dagster/dagster_home",
        load_incluster_config=False,
        kubeconfig_file=str(kubeconfig),
        env_config_maps=[m["name"] for m in config["envConfigMaps"]],
        env_secrets=[s["name"] for s in config["envSecrets"]],
        env_vars=config["envVars"],
        volume_mounts=config["volumeMounts"],
        volumes=config["volumes"],
        run_k8s_config={
            "job_spec_config": run_config["jobSpecConfig"],
            "pod_spec_config": run_config["podSpecConfig"],
        },
    )


@pytest.mark.parametrize("partition", ["bridge", "droid@00000-00031"])  # a shard range too
def test_a_run_renders_as_the_job_kubernetes_would_start(tmp_path, partition):
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    deployment = values["dagster-user-deployments"]["deployments"][0]
    image = f"{deployment['image']['repository']}:{deployment['image']['tag']}"
    grpc = deployment["dagsterApiGrpcArgs"]
    pointer = FileCodePointer(python_file=grpc[1], fn_name="defs", working_directory=grpc[3])
    origin = JobPythonOrigin(
        "__ASSET_JOB",
        RepositoryPythonOrigin("/opt/warehouse/.venv/bin/python", pointer, container_image=image),
    )
    run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id="0f3c8a52-5d0e-4a43-9d3a-1c2b3d4e5f60",
        tags={SOURCE_TAG: "openx", PARTITION_TAG: partition, **k8s_tags("openx")},
        job_code_origin=origin,
    )
    job = render_run_job(run, _launcher(values, tmp_path))

    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "registry.example.com/episode-warehouse:0.1.0"
    # the run's source sizes its pod: OpenX's, as assets/sources/openx.py declares it
    assert container["resources"] == {
        "requests": {"cpu": "4", "memory": "16Gi"},
        "limits": {"memory": "24Gi"},
    }
    assert container["args"][:5] == [
        "/opt/warehouse/.venv/bin/python",
        "-m",
        "dagster",
        "api",
        "execute_run",
    ]
    run_args = json.loads(container["args"][5])
    assert run_args["pipeline_run_id"] == run.run_id
    pointer = run_args["pipeline_origin"]["repository_origin"]["code_pointer"]
    assert pointer["python_file"] == "/opt/warehouse/definitions.py"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["EPISODE_WAREHOUSE_SCRATCH"] == env["EPISODE_WAREHOUSE_LOCAL_COPY"] == "/scratch"
    assert env["DAGSTER_HOME"] == "/opt/dagster/dagster_home"
    assert env["DAGSTER_RUN_JOB_NAME"] == "__ASSET_JOB"
    assert {"configMapRef": {"name": "warehouse-env"}} in container["envFrom"]
    assert {"secretRef": {"name": "warehouse-gcs-credentials"}} in container["envFrom"]
    assert container["volumeMounts"] == [{"mountPath": "/scratch", "name": "scratch"}]
    assert pod["nodeSelector"] == {"warehouse/pool": "builders"}
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["ttlSecondsAfterFinished"] == 3600


def test_each_source_has_pod_resources():
    from episode_warehouse.sources import registry

    for source in registry.names():  # every registered source, a new one included
        config = json.loads(k8s_tags(source)["dagster-k8s/config"])
        assert config["container_config"]["resources"] == source_pod(source)
        assert config["container_config"]["resources"]["requests"]["cpu"]
