"""``publish_to_hub``: push a named LeRobot export to a hub dataset repo, from the UI's
Launchpad (the same domain call as ``warehouse publish``). The hub repo shows as an asset
(``hub/OWNER/NAME``) whose materializations are the publishes, with the commit each made."""

import dagster as dg

from assets.retries import only_transient_retries
from episode_warehouse.export.publish import publish_export
from episode_warehouse.hub.url import HubUrl, check_repo_id
from resources import HubDestination, WarehouseStorage


class PublishConfig(dg.Config):
    """``export``: the export's name (a folder under ``<root>/lerobot/``); ``repo``: the dataset
    repo, ``OWNER/NAME``; ``branch``: made from ``main`` if new; ``private``: for a repo created
    now; ``license``: the sources' license as the hub names it (``cc-by-4.0``), if known."""

    export: str
    repo: str
    branch: str = "main"
    private: bool = False
    license: str | None = None


@dg.op(out={}, tags={"kind": "huggingface"})
def publish_export_to_hub(
    context: dg.OpExecutionContext,
    config: PublishConfig,
    warehouse: WarehouseStorage,
    hub: HubDestination,
):
    """One commit: the export's files and its dataset card; the v3.0 tag moved on ``main``."""
    with only_transient_retries(context):
        repo = check_repo_id(config.repo, subject="publish_to_hub config: repo")
        done = publish_export(
            warehouse.layout(),
            config.export,
            HubUrl("dataset", repo, config.branch),
            client=hub.client(),
            private=config.private,
            license=config.license,
        )
    yield dg.AssetMaterialization(
        asset_key=["hub", *repo.split("/")],
        description=f"LeRobot export {config.export}",
        metadata={
            "url": dg.MetadataValue.url(
                f"{hub.client().endpoint}/datasets/{repo}/tree/{done.commit}"
            ),
            "commit": done.commit,
            "branch": config.branch,
            "export": config.export,
            "uploaded": len(done.uploaded),
            "unchanged": done.unchanged,
            "deleted": len(done.deleted),
            "MB_uploaded": round(done.bytes_uploaded / 1e6, 2),
        },
    )


@dg.job(description="Publish a LeRobot export to a Hugging Face Hub dataset repo (HF_TOKEN).")
def publish_to_hub():
    publish_export_to_hub()
