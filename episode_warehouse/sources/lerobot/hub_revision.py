"""Which revision of a LeRobot dataset on the hub is read: the rule ``LeRobotDataset`` follows.

lerobot tags each dataset with the codebase version it was written in (``v3.0``, ``v2.1``, ...)
and reads the tag of its own version, else the newest tag of the same major version not newer
than its own (``lerobot.datasets.utils.get_safe_version``). So does this warehouse, for v3.0:

- a ``v3.0`` tag, or the newest ``v3.x`` tag with x <= 0: that tag;
- only older major versions (``v2.1``, ``v2.0``): refused, with lerobot's conversion command;
- only newer ones: refused (a newer lerobot wrote it);
- no version tag at all: ``main`` (lerobot refuses these; a dataset uploaded without
  lerobot's ``push_to_hub`` has none), and ``meta/info.json``'s ``codebase_version`` decides.
"""

from __future__ import annotations

import re

from episode_warehouse.errors import FormatVersionError
from episode_warehouse.hub.client import HubClient
from episode_warehouse.sources.lerobot.dataset import CODEBASE_VERSION

_VERSION = re.compile(r"^v(\d+)\.(\d+)$")
CONVERT = "python -m lerobot.datasets.v30.convert_dataset_v21_to_v30 --repo-id={repo_id}"


def lerobot_revision(client: HubClient, repo_id: str) -> str:
    """The revision (a tag, or ``main``) to read of ``repo_id``.

    Raises:
        FormatVersionError: only other major versions are tagged (names the conversion).
        SourceMissingError: no such repo, or private or gated without a token.
    """
    major, minor = (int(x) for x in CODEBASE_VERSION[1:].split("."))
    versions = {}
    for tag in client.tags(repo_id):
        m = _VERSION.match(tag)
        if m:
            versions[(int(m.group(1)), int(m.group(2)))] = tag
    if not versions:
        return "main"
    compatible = [v for v in versions if v[0] == major and v[1] <= minor]
    if compatible:
        return versions[max(compatible)]
    newest = versions[max(versions)]
    if max(versions)[0] < major:
        raise FormatVersionError(
            f"the dataset is tagged {newest} at newest; this warehouse reads {CODEBASE_VERSION}",
            subject=f"hf://datasets/{repo_id}",
            fix=f"convert it with lerobot ({CONVERT.format(repo_id=repo_id)}) and push it, "
            "or ask its owner to",
        )
    raise FormatVersionError(
        f"the dataset is tagged {newest}, newer than the {CODEBASE_VERSION} this warehouse reads",
        subject=f"hf://datasets/{repo_id}",
        fix="upgrade the warehouse (a newer lerobot wrote this dataset)",
    )
