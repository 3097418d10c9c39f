"""LeRobot v3.0 datasets: mirrored files -> decoded episodes (TED and catalog from factories).

Its resource, ``LeRobotSource``: ``LEROBOT_URL``, the hub (``hf://datasets``, the default: a
partition is a repo id, ``lerobot/pusht``), or a local folder or ``gs://bucket/prefix`` holding
``<owner>/<name>/meta/info.json``. On the hub, huggingface_hub's own settings apply
(``HF_ENDPOINT``, ``HF_TOKEN`` or the saved login, ``HF_HUB_CACHE``); the sensor watches the repos
``LEROBOT_REPOS`` names (the hub cannot be listed whole).
"""

import dagster as dg

from assets import versions
from assets.results import decoded_result, mirrored_result
from assets.sources.spec import SourceAssets, SourceResource
from assets.stage import Stage, StageRun
from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.errors import ConfigError
from episode_warehouse.gcs import url_scheme
from episode_warehouse.hub.url import parse_hub_url
from episode_warehouse.sources.lerobot.fingerprints import lerobot_fingerprints
from episode_warehouse.sources.lerobot.mirror import mirror_dataset
from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from episode_warehouse.sources.lerobot.stage import decode_lerobot_stage
from resources.settings import setting

DEFAULT_URL = "hf://datasets"


class LeRobotSource(SourceResource):
    """``LEROBOT_URL`` (default ``hf://datasets``); requests bounded by ``LEROBOT_TIMEOUT_S`` (60)
    and retried; ``STORAGE_EMULATOR_HOST`` points GCS at an emulator; ``LEROBOT_REPOS``
    (comma-separated repo ids) are the hub datasets the sensor watches."""

    url: str | None = None
    repos: str | None = None

    def source_url(self) -> str:
        url = setting(self.url, "LEROBOT_URL", DEFAULT_URL)
        if not url:
            raise ConfigError(
                "no LeRobot source is set",
                subject="LEROBOT_URL",
                fix=f"set LEROBOT_URL to {DEFAULT_URL}, a folder or gs://bucket/prefix holding "
                "<owner>/<name>/meta/",
            )
        if url_scheme(url) == "hf" and parse_hub_url(url, setting="LEROBOT_URL").repo_id:
            raise ConfigError(
                "LEROBOT_URL names one repo; a LeRobot partition is the repo id",
                subject=f"LEROBOT_URL={url}",
                fix=f"set LEROBOT_URL={DEFAULT_URL} and materialize the repo id as the partition",
            )
        return url

    def watched_repos(self) -> list[str]:
        """The hub repos the sensor watches (``LEROBOT_REPOS``), checked."""
        text = setting(self.repos, "LEROBOT_REPOS", "")
        return [check_repo_id(r.strip()) for r in text.split(",") if r.strip()]

    def store(self) -> BlobStore:
        return open_blob_store(
            self.source_url(),
            self.policy("LEROBOT_TIMEOUT_S"),
            endpoint=self.endpoint(),
        )


lerobot_datasets = dg.DynamicPartitionsDefinition(name="lerobot_datasets")  # repo ids


def mirror_files(stage: StageRun) -> dg.MaterializeResult:
    # Idempotent: files whose size and generation match the published record are linked.
    target, common = stage.raw_folder("lerobot")
    built, report = mirror_dataset(stage.source.store(), stage.key, target, **common)
    return mirrored_result(built, report, target)


def decode_episodes(stage: StageRun) -> dg.MaterializeResult:
    repo_id, warehouse = stage.key, stage.warehouse
    # Idempotent: rebuilt only when the files or this code version changed.
    layout = warehouse.layout()
    built = decode_lerobot_stage(layout, repo_id, code_version=stage.code_version)
    return decoded_result(
        built,
        layout.decoded_dir("lerobot", repo_id),
        tasks=len(built.meta.tasks),
        fps=built.meta.fps,
        keys=dg.MetadataValue.json(built.meta.arrays),
    )


ASSETS = SourceAssets(
    name="lerobot",
    partitions=lerobot_datasets,
    files=Stage(
        "lerobot_files",
        mirror_files,
        "The meta/, data/ and videos/ files of one LeRobot v3.0 dataset (repo id owner/name), "
        "mirrored from LEROBOT_URL and checksummed.",
        {"lerobot", "parquet"},
        versions.LEROBOT_FILES,
    ),
    episodes=Stage(
        "lerobot_episodes",
        decode_episodes,
        "Every frame of one LeRobot dataset, keys as TorchRL lays LeRobot data out: PNG pixels "
        "exact, video frames those LeRobotDataset decodes.",
        {"numpy"},
        versions.LEROBOT_EPISODES,
    ),
    group="lerobot_source",  # "lerobot" is the exports' group
    resource_key="lerobot_source",
    resource=LeRobotSource(),
    listing=lambda lerobot_source: lerobot_fingerprints(
        lerobot_source.store(), lerobot_source.watched_repos()
    ),
    sensor_description="Lists LEROBOT_URL; adds new <owner>/<name> datasets as partitions and "
    "requests lerobot_files for each dataset whose files appeared or changed.",
    pod={"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"memory": "16Gi"}},
)
