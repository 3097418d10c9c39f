"""Runs as Kubernetes Jobs (``K8sRunLauncher``, deploy/helm/values.yaml): per-source pod
resources, and the Job manifest of a run, rendered offline exactly as the launcher builds it.

Every backfill tags its runs with ``dagster-k8s/config`` for its source (:func:`k8s_tags`); the
Celery and default launchers ignore the tag, the Kubernetes launcher sizes the run's pod by it.
"""

from __future__ import annotations

import json

K8S_CONFIG_TAG = "dagster-k8s/config"


def source_pod(source: str) -> dict:
    """What one run of ``source`` (one partition) requests and may use: its ``SourceAssets.pod``
    (``assets/sources/<name>.py``)."""
    from warehouse_cli.runner import source_assets

    return source_assets(source).pod


def k8s_tags(source: str) -> dict[str, str]:
    """The run tag that sizes a run's pod for ``source``."""
    config = {"container_config": {"resources": source_pod(source)}}
    return {K8S_CONFIG_TAG: json.dumps(config, sort_keys=True, allow_nan=False)}


def render_run_job(run, launcher) -> dict:
    """The Kubernetes Job ``launcher`` (a ``K8sRunLauncher``) would create for ``run``, as a
    dict, without a cluster: the same container context, job config and command."""
    from dagster_k8s.job import construct_dagster_k8s_job, get_job_name_from_run_id
    from kubernetes.client import ApiClient

    from warehouse_cli.cluster.private_api import execute_run_args

    RunArgs = execute_run_args()

    origin = run.job_code_origin
    context = launcher.get_container_context_for_run(run)
    job_config = context.get_k8s_job_config(
        job_image=origin.repository_origin.container_image, run_launcher=launcher
    )
    args = RunArgs(
        job_origin=origin, run_id=run.run_id, instance_ref=None, set_exit_code_on_failure=None
    ).get_command_args()
    name = get_job_name_from_run_id(run.run_id)
    job = construct_dagster_k8s_job(
        job_config=job_config,
        args=args,
        job_name=name,
        pod_name=name,
        component="run_worker",
        user_defined_k8s_config=context.run_k8s_config,
        labels={"dagster/job": origin.job_name, "dagster/run-id": run.run_id},
        env_vars=[{"name": "DAGSTER_RUN_JOB_NAME", "value": origin.job_name}],
    )
    return ApiClient().sanitize_for_serialization(job)
