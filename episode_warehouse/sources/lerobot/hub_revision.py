"""Which revision of a LeRobot dataset on the hub is read: the rule ``LeRobotDataset`` follows.

lerobot tags each dataset with the codebase version it was written in (``v3.0``, ``v2.1``, ...)
and reads the tag of its own version (``lerobot.datasets.utils.get_safe_version``). This
warehouse reads two versions (``layout.LAYOUTS``), so it reads the newest tag of those:

- a ``v3.0`` tag, else a ``v2.1`` tag;
- only older versions (``v2.0``, ``v1.x``): refused, naming lerobot's v2.0 -> v2.1 converter;
  only newer ones: refused (a newer lerobot wrote it);
- no version tag at all: ``main`` (lerobot refuses these; a dataset uploaded without
  lerobot's ``push_to_hub`` has none), and ``meta/info.json``'s ``codebase_version`` decides.
"""

from __future__ import annotations

from episode_warehouse.errors import FormatVersionError
from episode_warehouse.hub.client import HubClient
from episode_warehouse.sources.lerobot.layout import READ_VERSIONS, READS, V20_TO_V21, version_of


def lerobot_revision(client: HubClient, repo_id: str) -> str:
    """The revision (a tag, or ``main``) to read of ``repo_id``.

    Raises:
        FormatVersionError: only versions no reader reads are tagged (names the way out).
        SourceMissingError: no such repo, or private or gated without a token.
    """
    versions = {}
    for tag in client.tags(repo_id):
        found = version_of(tag)
        if found is not None:
            versions[found] = tag
    if not versions:
        return "main"
    for version in READ_VERSIONS:  # newest first
        if version in versions:
            return versions[version]
    newest = versions[max(versions)]
    subject = f"hf://datasets/{repo_id}"
    if max(versions) > READ_VERSIONS[0]:
        raise FormatVersionError(
            f"the dataset is tagged {newest}, newer than the {READS} this warehouse reads",
            subject=subject,
            fix="upgrade the warehouse (a newer lerobot wrote this dataset)",
        )
    raise FormatVersionError(
        f"the dataset is tagged {newest} at newest; this warehouse reads {READS}",
        subject=subject,
        fix=f"convert it to v2.1 with lerobot 0.3.3 ({V20_TO_V21.format(repo_id=repo_id)}) and "
        "push it, or ask its owner to",
    )
