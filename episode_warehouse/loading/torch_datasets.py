"""torch datasets over a selection: map-style slices and a sharded, deterministic stream.

Both hold only paths and small index arrays; each process opens the memory-mapped TEDs itself
on first use, so they pickle cheaply into DataLoader workers and read lazily (bounded memory).

Every read goes through :class:`~episode_warehouse.ted.reader.TedReader`: a selected episode's
rows are memory-mapped from a folder, or fetched as byte ranges from a ``gs://`` root (nothing
is downloaded whole), into a small buffer of episodes; :class:`EpisodeStream` has the next ones
read in a background thread while the current one is consumed (:class:`~episode_warehouse.
loading.read_ahead.ReadAhead`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import weakref

import numpy as np
import torch
from tensordict import TensorDictBase
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from episode_warehouse.errors import ConfigError
from episode_warehouse.incremental import fingerprint
from episode_warehouse.loading.batch_read import RowsRef, SliceRef, read_slices, stack_slices
from episode_warehouse.loading.read_ahead import ReadAhead, depth_for
from episode_warehouse.loading.schedule import Plan, epoch_items, remaining_items, shard_items
from episode_warehouse.loading.selection import Selection
from episode_warehouse.loading.ted_cache import TedCache

log = logging.getLogger(__name__)


def ted_collate(items: list[RowsRef] | list[TensorDictBase] | TensorDictBase) -> TensorDictBase:
    """``collate_fn`` for DataLoader: the batch of the items (references to rows, as
    ``EpisodeStream`` and ``VLADataset`` yield them, read as one batch by their class's
    :meth:`~episode_warehouse.loading.batch_read.RowsRef.read_batch`; or slices already read,
    which it stacks; or a batch its dataset made with ``__getitems__``, which it hands over).

    In a DataLoader worker the batch is written into one of the worker's reused shared-memory
    slots (:mod:`~episode_warehouse.batches.slots`): it stays valid while the main
    process holds it; ``clone()`` what you keep beyond that or pass to another process.

    Raises:
        ConfigError: the slices come from TEDs of different schemas (another source), naming
            the keys that differ.
    """
    if isinstance(items, TensorDictBase):  # a batch its dataset made (``__getitems__``)
        return items
    kinds = {type(item) for item in items}
    if len(kinds) == 1 and issubclass(kind := kinds.pop(), RowsRef):
        return kind.read_batch(items)
    return stack_slices([item.read() if isinstance(item, RowsRef) else item for item in items])


def no_collate(item: RowsRef | TensorDictBase) -> TensorDictBase:
    """``collate_fn`` for ``DataLoader(stream, batch_size=None)``: each item read alone (torch's
    default would iterate the TensorDict's rows)."""
    return item.read() if isinstance(item, RowsRef) else item


class EpisodeSliceDataset(Dataset):
    """Map-style: item k is the k-th non-overlapping slice of ``slice_len`` steps of the
    selected episodes. Every item has ``slice_len`` steps (so the default collate stacks them):
    the steps past an episode's last whole slice are not read, and an episode shorter than
    ``slice_len`` gives none. What is left out is said once, as a warning with its counts
    (``dropped_steps``, ``dropped_episodes``); a selection that would give no slice at all is
    an error naming the fix. :class:`EpisodeStream` yields every step, whole episodes.

    Raises:
        ConfigError: ``slice_len`` below 1, or longer than every selected episode.
    """

    def __init__(self, selection: Selection, slice_len: int) -> None:
        if slice_len < 1:
            raise ConfigError("slice_len must be >= 1", subject="EpisodeSliceDataset")
        self.cache = TedCache(selection)
        self.slice_len = slice_len
        counts = selection.length // slice_len
        self.dropped_steps = int((selection.length % slice_len).sum())
        self.dropped_episodes = int((counts == 0).sum())
        if len(selection) and not counts.any():
            raise ConfigError(
                f"every selected episode is shorter than slice_len={slice_len} (the longest has "
                f"{int(selection.length.max())} steps): no slice to give",
                subject="EpisodeSliceDataset",
                fix="choose a slice_len no longer than the episodes, or read whole episodes "
                "with EpisodeStream",
            )
        if self.dropped_steps:
            log.warning(
                "EpisodeSliceDataset: %d of %d selected steps are past the last whole slice of "
                "%d steps and not read (%d episode(s) shorter than a slice give none); "
                "EpisodeStream reads every step",
                self.dropped_steps, int(selection.length.sum()), slice_len,
                self.dropped_episodes,
            )  # fmt: skip
        self._episode = np.repeat(np.arange(len(selection)), counts)
        self._offset = (
            np.concatenate([np.arange(c) * slice_len for c in counts])
            if len(counts)
            else np.zeros(0, dtype=np.int64)
        )

    def __len__(self) -> int:
        return len(self._episode)

    def _ref(self, k: int) -> SliceRef:
        return SliceRef(self.cache, int(self._episode[k]), int(self._offset[k]), self.slice_len)

    def __getitem__(self, k: int) -> TensorDictBase:
        """Slice ``k``, read."""
        return self._ref(k).read()

    def __getitems__(self, ks: list[int]) -> TensorDictBase:
        """The batch of slices ``ks``, read at once (torch's DataLoader calls this with each
        batch of indices; ``ted_collate`` hands the batch over)."""
        return read_slices([self._ref(k) for k in ks])


STATE_MARKER = "episode_warehouse_stream"


class EpochAnnouncement:
    """The last :meth:`EpisodeStream.set_epoch` (how many calls so far, and the epoch) in a
    small file of the temporary folder, replaced atomically on each call: DataLoader workers
    (fork, forkserver or spawn, persistent or not) read it at the start of each iteration, so
    they follow the main process's epochs. The process that made it deletes it when done."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="episode-warehouse-epoch-")
        os.close(fd)
        self._write(0, 0)
        weakref.finalize(self, _remove_if_owner, self.path, os.getpid())

    def _write(self, count: int, epoch: int) -> None:
        tmp = f"{self.path}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(f"{count} {epoch}")
        os.replace(tmp, self.path)

    def announce(self, epoch: int) -> int:
        count = self.read()[0] + 1  # set_epoch is called by one process, the trainer's
        self._write(count, epoch)
        return count

    def read(self) -> tuple[int, int]:
        try:
            with open(self.path) as fh:
                count, epoch = fh.read().split()
        except (OSError, ValueError):  # gone with its owner: nothing announced since
            return 0, 0
        return int(count), int(epoch)

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]  # a reader: only the maker deletes the file


def _remove_if_owner(path: str, owner: int) -> None:
    if os.getpid() == owner:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


class EpisodeStream(IterableDataset):
    """Iterable over the selected episodes, each delivered exactly once per epoch across all
    DataLoader workers and distributed ranks, resumable mid-epoch.

    Items are :class:`~episode_warehouse.loading.batch_read.SliceRef` references to the rows
    (which episode, which steps): ``DataLoader(stream, batch_size=B, collate_fn=ted_collate)``
    reads each batch at once in the worker, its frames decoded straight into the batch
    (:mod:`~episode_warehouse.loading.batch_read`); ``item.read()`` reads one alone
    (``collate_fn=no_collate`` with ``batch_size=None``). A bucket root's slices are read ahead
    by ranges while the stream iterates and carried in the reference.

    Episodes are shuffled with ``seed + epoch`` (call :meth:`set_epoch` each epoch), then
    dealt round-robin to ranks, then to workers. Yields whole episodes (``slice_len=None``)
    or consecutive slices of ``slice_len`` steps (the last, shorter one too unless
    ``drop_last``). With ``weighted=True`` an epoch is ``num_samples`` draws (episodes, or
    slices at random offsets) with probability proportional to the selection's ``weight``
    column, deterministic per seed and epoch and dealt the same way (no draw twice).

    Epochs: :meth:`set_epoch` reaches DataLoader workers too, persistent ones included (a
    small announcement file each worker reads when its next iteration starts), and an
    iteration that starts after the previous one ran to its end begins the next epoch by
    itself, so every epoch delivers its items exactly once whether or not ``set_epoch`` is
    called; calling it with the epoch that has just ended delivers that epoch again.

    Resuming: :meth:`state_dict` is the shard's position in the epoch; a stream restored with
    :meth:`load_state_dict` in a new process (same selection, seed, rank and world size)
    yields exactly the remaining items, in the same order. With DataLoader workers, use
    ``torchdata.stateful_dataloader.StatefulDataLoader``: it saves and restores each worker's
    state through these two methods. To resume with another world size or worker count, pass
    :meth:`merge_states` of the states of every old rank (and worker): the unread items are
    dealt again, none repeated or lost.

    Args:
        selection: the episodes.
        slice_len: steps per item, or None for whole episodes. An episode whose length is
            not a multiple of it ends in one shorter slice (its last ``length % slice_len``
            steps), so a batch of slices may hold items of several lengths.
        drop_last: leave those shorter tail slices out (each slice then has ``slice_len``
            steps; an episode shorter than ``slice_len`` yields nothing).
        seed: shuffling (or drawing) seed; ``shuffle=False`` keeps catalog order.
        rank, world_size: default to torch.distributed's when it is initialized, else 0 and 1.
        weighted: draw ``num_samples`` items per epoch by the selection's weights.
        num_samples: draws per epoch (default: the number of selected episodes).
    """

    def __init__(
        self,
        selection: Selection,
        slice_len: int | None = None,
        *,
        seed: int = 0,
        shuffle: bool = True,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        weighted: bool = False,
        num_samples: int | None = None,
    ) -> None:
        super().__init__()
        self.cache = TedCache(selection)
        if weighted and selection.weight is None:
            raise ConfigError(
                "weighted=True needs a weight column in the selection",
                subject="EpisodeStream",
                fix="SELECT source, partition, episode, start, length, <expr> AS weight FROM ...",
            )
        self.plan = Plan(
            lengths=tuple(int(n) for n in selection.length),
            slice_len=slice_len,
            drop_last=drop_last,
            seed=seed,
            shuffle=shuffle,
            weights=tuple(float(w) for w in selection.weight) if weighted else None,  # type: ignore[union-attr]
            num_samples=num_samples if weighted else None,
        )
        self.slice_len, self.seed, self.shuffle, self.drop_last = (
            slice_len,
            seed,
            shuffle,
            drop_last,
        )
        dist = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = rank if rank is not None else (torch.distributed.get_rank() if dist else 0)
        self.world_size = (
            world_size
            if world_size is not None
            else (torch.distributed.get_world_size() if dist else 1)
        )
        self.epoch = 0
        self._position = 0  # items of this shard delivered this epoch
        # the shard states of earlier layouts this epoch resumed from (oldest first): the
        # items left after each are dealt again, and positions count in what remains
        self._layers: list[list[dict]] = []
        self._ended = False  # the last iteration delivered every item of self.epoch
        self._announced = EpochAnnouncement()
        self._seen = 0  # the announcement this copy of the stream last applied

    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` from its beginning, here and in every DataLoader worker at its
        next iteration (a no-op for an epoch still running, so it may be called after
        :meth:`load_state_dict`; the epoch that has just ended starts again)."""
        self._seen = self._announced.announce(epoch)
        self._start(epoch)

    def _start(self, epoch: int) -> None:
        if epoch != self.epoch or self._ended:
            self.epoch, self._position, self._layers = epoch, 0, []
            self.cache.new_epoch()
        self._ended = False

    def _begin_iteration(self) -> None:
        """Which epoch this iteration delivers: one announced since the last iteration, else
        the next one when the last iteration ran to its end, else the one still running."""
        count, epoch = self._announced.read()
        if count != self._seen:
            self._seen = count
            self._start(epoch)
        elif self._ended:
            self._start(self.epoch + 1)

    @staticmethod
    def _worker() -> tuple[int, int]:
        info = get_worker_info()
        return (info.id, info.num_workers) if info is not None else (0, 1)

    def _fingerprint(self) -> str:
        s = self.cache.selection
        return fingerprint(s.source, s.partition, s.episode.tolist(), self.plan.__dict__)

    def shard_items(self) -> np.ndarray:
        """The items (selection row, offset, length) this process delivers this epoch."""
        worker, workers = self._worker()
        items = epoch_items(self.plan, self.epoch)
        for layer in self._layers:
            items = remaining_items(items, layer)
        return shard_items(items, self.rank, self.world_size, worker, workers)

    def episode_order(self) -> np.ndarray:
        """The selection rows this process delivers this epoch, in order (each once per episode
        or draw)."""
        items = self.shard_items()
        keep = np.ones(len(items), dtype=bool)
        keep[1:] = (items[1:, 0] != items[:-1, 0]) | (items[1:, 1] <= items[:-1, 1])
        return items[keep, 0]

    def __iter__(self):
        self._begin_iteration()
        items = self.shard_items()[self._position :]
        rows = items[:, 0]
        runs = rows[np.r_[True, rows[1:] != rows[:-1]]] if len(rows) else rows  # fetch order
        steps = self.cache.read_ahead(int(runs[0]) if len(runs) else None)
        depth = depth_for(steps, self.cache.selection.length[runs])
        with ReadAhead(self.cache.fetch_episode, runs.tolist(), depth) as ahead:
            previous = -1
            for row, offset, length in items:
                self._position += 1
                if row != previous:  # a new run: its episode is the next one fetched
                    self.cache._episodes.pop(int(row), None)
                previous = row
                row, offset, length = int(row), int(offset), int(length)
                if self.cache.mapped(row):  # read with its batch, by ted_collate
                    yield SliceRef(self.cache, row, offset, length)
                else:  # a bucket root's: its episode read ahead, its batch read from it
                    yield SliceRef(self.cache, row, offset, length,
                                   self.cache.fetched(row, ahead))  # fmt: skip
        self._ended = True

    def state_dict(self) -> dict:
        """This shard's place in the epoch (call it in the process that iterates: the main one,
        or a DataLoader worker, as StatefulDataLoader does)."""
        worker, workers = self._worker()
        return {
            STATE_MARKER: 1,
            "selection": self._fingerprint(),
            "epoch": self.epoch,
            "rank": self.rank,
            "world_size": self.world_size,
            "worker": worker,
            "num_workers": workers,
            "position": self._position,
            "layers": self._layers,
        }

    @staticmethod
    def merge_states(states: list[dict]) -> dict:
        """One state from the states of every (rank, worker) of a run (StatefulDataLoader
        states are searched for them), to resume that epoch with another layout."""
        found = [s for state in states for s in _stream_states(state)]
        if not found:
            raise ConfigError(
                "no EpisodeStream state in what was given",
                subject="stream state",
                fix="pass the state_dict() of every rank (or of its StatefulDataLoader)",
            )
        runs = {(s["epoch"], s["selection"], fingerprint(s["layers"])) for s in found}
        if len(runs) != 1:
            raise ConfigError(
                "the states are of different epochs, selections or resumptions",
                subject="stream state",
                fix="pass states saved at one point of one run",
            )
        first = found[0]
        shards = [{k: v for k, v in s.items() if k != "layers"} for s in found]
        return {
            STATE_MARKER: 1,
            "selection": first["selection"],
            "epoch": first["epoch"],
            "layers": [*first["layers"], shards],
            "merged": True,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue where ``state`` (this shard's own, or :meth:`merge_states` of another
        layout) left the epoch.

        Raises:
            ConfigError: the state is of another selection or plan, or of another shard
                layout without being merged.
        """
        if state.get(STATE_MARKER) != 1:
            raise ConfigError("not an EpisodeStream state", subject="stream state")
        if state["selection"] != self._fingerprint():
            raise ConfigError(
                "the state was saved for another selection, seed or slicing",
                subject="stream state",
                fix="restore with the same selection, seed, slice_len and weights",
            )
        self.epoch, self._ended = state["epoch"], False
        if state.get("merged"):
            self._layers, self._position = list(state["layers"]), 0
            return
        worker, workers = self._worker()
        layout = (state["rank"], state["world_size"], state["worker"], state["num_workers"])
        if get_worker_info() is not None or state["num_workers"] == 1:
            here = (self.rank, self.world_size, worker, workers)
            if layout != here:
                raise ConfigError(
                    f"the state is of shard {layout} (rank, world size, worker, workers), this "
                    f"stream is {here}",
                    subject="stream state",
                    fix="pass EpisodeStream.merge_states(states of every old rank and worker)",
                )
        self._position, self._layers = state["position"], list(state["layers"])


def _stream_states(value) -> list[dict]:
    """Every EpisodeStream state inside ``value`` (a state, or a StatefulDataLoader state)."""
    if isinstance(value, dict):
        if value.get(STATE_MARKER) == 1:
            if value.get("merged"):
                raise ConfigError(
                    "a merged state cannot be merged again before it was resumed",
                    subject="stream state",
                    fix="merge the states saved by the streams that resumed from it",
                )
            return [value]
        return [s for v in value.values() for s in _stream_states(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _stream_states(v)]
    return []
