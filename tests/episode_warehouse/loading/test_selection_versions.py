"""A selection is pinned to the TED versions it was made on (#69 item 2): before, a new epoch, or a
reader reopened mid-epoch after the OPEN_PARTITIONS LRU closed it, read the rebuilt partition
with the old offsets (after a republish with other episode lengths, most slices came from another
episode than their row named, some spanned two). Every slice of every epoch is checked here
against an independent expectation: the rows of the version it must come from."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse import open_ted
from episode_warehouse.errors import StaleSelectionError
from episode_warehouse.loading import EpisodeStream, select_episodes, ted_cache
from tests.helpers import build_atari

pytestmark = pytest.mark.integration  # catalog queries

ALL = "SELECT source, partition, episode, start, length FROM episodes ORDER BY partition, episode"
# the first ten steps of every episode (build_atari's episodes are 30 steps or longer)
HEADS = (
    "SELECT source, partition, episode, start + 3 AS start, 10 AS length FROM episodes "
    "ORDER BY partition, episode"
)


def _episodes(td) -> dict[int, tuple[int, int]]:
    """Episode id -> (start, length) in a TED, from its own episode column."""
    ids = td["episode"].numpy()
    out = {}
    for e in np.unique(ids).tolist():
        rows = np.flatnonzero(ids == e)
        out[e] = (int(rows[0]), len(rows))
    return out


def _check_epoch(stream, selection, root, made_on) -> int:
    """Every slice of one epoch equals the rows of its selection row's episode in the TED now
    published at ``root``, at the row's offset within that episode in the version the selection
    was made on (``made_on``: partition -> episode -> (start, length)); the count."""
    teds = {p: open_ted("atari", p, root) for p in made_on}
    now = {p: _episodes(td) for p, td in teds.items()}
    count = 0
    for item in (ref.read() for ref in stream):
        i = int(item["selection_index"][0])
        partition, episode = selection.partition[i], int(selection.episode[i])
        offset = int(selection.start[i]) - made_on[partition][episode][0]
        start = now[partition][episode][0] + offset + int(item["step"][0])
        want = teds[partition][start : start + len(item["step"])]
        assert (item["episode"] == episode).all(), (i, partition, episode)
        for key in ("observation", "action", ("next", "reward")):
            np.testing.assert_array_equal(item[key].numpy(), want[key].numpy(), str((i, key)))
        count += 1
    return count


@pytest.fixture
def two_versions(tmp_path):
    """Pong/1 and Pong/2 built, their episodes as first published, and ``rebuild()``, which
    publishes Pong/1 again with other episodes (other lengths)."""
    root = tmp_path / "wh"
    build_atari(root, "Pong/1", 1, episodes=8)
    build_atari(root, "Pong/2", 2, episodes=8)
    made_on = {p: _episodes(open_ted("atari", p, root)) for p in ("Pong/1", "Pong/2")}

    def rebuild():
        build_atari(root, "Pong/1", 11, episodes=8)
        assert _episodes(open_ted("atari", "Pong/1", root)) != made_on["Pong/1"]

    return root, made_on, rebuild


def test_a_new_epoch_over_a_rebuilt_partition_is_refused_by_default(two_versions):
    root, made_on, rebuild = two_versions
    sel = select_episodes(ALL, root=root)
    stream = EpisodeStream(sel, slice_len=16, seed=1)
    assert _check_epoch(stream, sel, root, made_on) > 0
    rebuild()
    stream.set_epoch(1)
    with pytest.raises(StaleSelectionError, match="atari:Pong/1 was rebuilt since") as err:
        list(stream)
    assert 'on_rebuild="refresh"' in str(err.value)


def test_a_new_epoch_re_resolves_the_rows_when_asked(two_versions):
    """``on_rebuild="refresh"``: each row is the same steps of the same episode in the new
    version (ten steps from the fourth of each episode), every slice of both epochs checked."""
    root, made_on, rebuild = two_versions
    sel = select_episodes(HEADS, root=root, on_rebuild="refresh")
    stream = EpisodeStream(sel, slice_len=4, seed=2)
    first = _check_epoch(stream, sel, root, made_on)
    rebuild()
    stream.set_epoch(1)
    assert _check_epoch(stream, sel, root, made_on) == first


def test_a_row_the_rebuilt_episode_no_longer_holds_is_named(two_versions):
    root, _, rebuild = two_versions
    sel = select_episodes(ALL, root=root, on_rebuild="refresh")
    stream = EpisodeStream(sel, slice_len=16, seed=1)
    list(stream)
    rebuild()  # other lengths: some whole episodes no longer fit their new ones
    stream.set_epoch(1)
    with pytest.raises(StaleSelectionError, match="no longer holds selection row"):
        list(stream)


def test_a_reader_reopened_mid_epoch_never_reads_another_version(two_versions, monkeypatch):
    """The LRU of open partitions closes Pong/1 while Pong/2 is read; Pong/1 is rebuilt; its
    reader, opened again within the epoch, cannot open the version the epoch began on (a
    folder keeps none): refused, where it read the new version with the old offsets."""
    root, _, rebuild = two_versions
    monkeypatch.setattr(ted_cache, "OPEN_PARTITIONS", 1)
    monkeypatch.setattr(ted_cache, "EPISODE_BUFFER", 1)
    sel = select_episodes(ALL, root=root)
    stream = EpisodeStream(sel, slice_len=16, seed=3)
    items = iter(stream)
    seen = []
    for item in (ref.read() for ref in items):
        seen.append(sel.partition[int(item["selection_index"][0])])
        if seen[-1] == "Pong/2" and "Pong/1" in seen:
            break
    rebuild()
    with pytest.raises(StaleSelectionError, match="atari:Pong/1 was rebuilt during the epoch"):
        for _ in items:
            pass


def test_a_replay_buffer_over_a_rebuilt_selection(two_versions):
    """The replay buffer's sampler draws the selection's rows: made over a rebuilt partition,
    it refuses, or samples the re-resolved rows (every slice inside its row's episode)."""
    from episode_warehouse.loading import replay_buffer

    root, made_on, rebuild = two_versions
    plain = select_episodes(ALL, root=root)
    heads = select_episodes(HEADS.replace("ORDER BY", "WHERE partition = 'Pong/1' ORDER BY"),
                            root=root, on_rebuild="refresh")  # fmt: skip
    rebuild()
    with pytest.raises(StaleSelectionError, match="atari:Pong/1 was rebuilt since"):
        replay_buffer(plain, slice_len=4, batch_size=64)
    rb = replay_buffer(heads, slice_len=4, batch_size=256, seed=0)
    now = {p: _episodes(open_ted("atari", p, root)) for p in made_on}
    allowed = set()  # the rows of Pong/1 each selected ten-step head covers now
    for i in range(len(heads)):
        e = int(heads.episode[i])
        first = now["Pong/1"][e][0] + int(heads.start[i]) - made_on["Pong/1"][e][0]
        allowed.update(range(first, first + 10))
    _, info = rb.sample(return_info=True)
    index = info["index"]
    index = (index[0] if isinstance(index, tuple) else index).tolist()
    assert len(set(index)) > 8 and set(index) <= allowed
