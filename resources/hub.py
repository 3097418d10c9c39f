"""The Hugging Face Hub as a destination: where ``publish_to_hub`` pushes LeRobot exports.

huggingface_hub's own settings apply: ``HF_ENDPOINT`` (default https://huggingface.co) and
``HF_TOKEN`` (else the token ``hf auth login`` saved). The token is read when a run starts,
passed to huggingface_hub only, and never logged; in the UI it shows as the variable's name.
"""

from __future__ import annotations

import dagster as dg

from episode_warehouse.hub.client import HubClient
from episode_warehouse.retry import RetryPolicy
from resources.settings import setting


class HubDestination(dg.ConfigurableResource):
    """``HF_ENDPOINT`` and ``HF_TOKEN``; requests bounded by ``HF_TIMEOUT_S`` (60) and
    retried when transient."""

    endpoint: str | None = None
    token: str | None = None
    timeout_s: int | None = None
    attempts: int = 6

    def client(self) -> HubClient:
        return HubClient(
            repo_type="dataset",
            endpoint=self.endpoint,  # else HF_ENDPOINT (episode_warehouse.settings)
            token=setting(self.token, "HF_TOKEN", "") or None,
            policy=RetryPolicy(
                attempts=self.attempts,
                timeout_s=setting(self.timeout_s, "HF_TIMEOUT_S", 60, cast=int),
            ),
        )
