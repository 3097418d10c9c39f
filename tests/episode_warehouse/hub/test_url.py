"""hf:// URLs, repo ids and revisions are checked where they enter: what the hub accepts passes,
anything that could leave a folder or reach another repo is refused with the form to use."""

from __future__ import annotations

import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.hub.url import HubUrl, check_revision, parse_hub_url


def test_the_accepted_forms():
    assert parse_hub_url("hf://datasets", setting="S") == HubUrl("dataset")
    assert parse_hub_url("hf://datasets/lerobot/pusht/", setting="S") == HubUrl(
        "dataset", "lerobot/pusht"
    )
    sha = "a" * 40
    parsed = parse_hub_url(f"hf://datasets/jxu124/OpenX-Embodiment@{sha}", setting="S")
    assert parsed == HubUrl("dataset", "jxu124/OpenX-Embodiment", sha)
    assert parsed.url == f"hf://datasets/jxu124/OpenX-Embodiment@{sha}"
    assert check_revision("refs/pr/3", subject="s") == "refs/pr/3"
    assert check_revision("v3.0", subject="s") == "v3.0"


@pytest.mark.parametrize(
    "url",
    [
        "hf://buckets/x/y",
        "hf://datasets/../etc",
        "hf://datasets/a/b/c",
        "hf://datasets/a",
        "hf://datasets/-a/b",
        "hf://datasets@main",
        "hf://datasets/a/b@../../x",
        "hf://datasets/a/b@-rf",
        "hf://datasets/a/b@x//y",
        "hf://datasets/a/b@main.lock",
        "hf://datasets/a/b@x y",
        "hf://datasets/a/b@" + "x" * 300,
        "gs://datasets/a/b",
    ],
)
def test_hostile_or_malformed_urls_are_refused_naming_the_setting(url):
    with pytest.raises(ConfigError, match=r"OPENX_URL=.*hf://datasets/OWNER/NAME|OPENX_URL"):
        parse_hub_url(url, setting="OPENX_URL")
