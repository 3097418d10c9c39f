"""The episode viewer over a ``gs://`` root reads the byte ranges of the episode it shows (#43),
and they equal the whole TED's rows."""

import torch

from episode_warehouse.storage import parse_root
from episode_warehouse.ted import open_ted
from episode_warehouse.viewer.partition import PartitionTed
from tests.bucket.conftest import layout_of
from tests.helpers import build_atari


def test_a_bucket_root_is_read_by_the_ranges_shown(bucket_url):
    layout = layout_of(bucket_url)
    build_atari(layout, "Pong/1", 1, capacity=100, episodes=8, lengths=(20, 60))
    ted = PartitionTed(parse_root(bucket_url), "atari", "Pong/1")
    rows = ted.rows(3)
    td = open_ted("atari", "Pong/1", root=bucket_url)  # the whole TED, downloaded
    span = ted.span(3)
    assert torch.equal(
        rows["observation"], td["observation"][span.start : span.start + span.length]
    )
    frames_bytes = td["observation"][0].numel() * len(td)
    assert 0 < ted.bytes_fetched < frames_bytes / 3  # one episode of eight, not the partition
