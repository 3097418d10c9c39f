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
import threading
import weakref
from collections import OrderedDict

import numpy as np
import torch
from tensordict import TensorDictBase
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from episode_warehouse.errors import ConfigError, StaleSelectionError
from episode_warehouse.incremental import fingerprint
from episode_warehouse.loading.batch_read import SliceRef, read_batch
from episode_warehouse.loading.read_ahead import ReadAhead
from episode_warehouse.loading.schedule import Plan, epoch_items, remaining_items, shard_items
from episode_warehouse.loading.selection import Selection, same_version
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root
from episode_warehouse.ted.reader import TedReader

log = logging.getLogger(__name__)


def ted_collate(items: list[TensorDictBase] | list[SliceRef] | TensorDictBase) -> TensorDictBase:
    """``collate_fn`` for DataLoader: stack equal-length slices into one TensorDict; slices
    given as :class:`~episode_warehouse.loading.batch_read.SliceRef` (``decode="batch"``) are
    read and decoded here, as one batch (:func:`~episode_warehouse.loading.batch_read.
    read_batch`).

    In a DataLoader worker the batch is stacked into one of the worker's reused shared-memory
    slots (:mod:`~episode_warehouse.loading.shared_batches`): it stays valid while the main
    process holds it; ``clone()`` what you keep beyond that or pass to another process.

    Raises:
        ConfigError: the slices come from TEDs of different schemas (another source), naming
            the keys that differ.
    """
    if isinstance(items, TensorDictBase):  # a batch its dataset made (``__getitems__``)
        return items
    refs = [item for item in items if isinstance(item, SliceRef)]
    if refs and len(refs) == len(items):
        batch = read_batch(refs)
        if batch is not None:
            return batch
    slices = [item.read() if isinstance(item, SliceRef) else item for item in items]
    if get_worker_info() is not None:
        from episode_warehouse.loading.shared_batches import stack_into_slot

        batch = stack_into_slot(slices)
        if batch is not None:
            return batch
    try:
        return torch.stack(slices).contiguous()
    except (RuntimeError, KeyError, ValueError, TypeError):
        from episode_warehouse.loading.schema import require_one_schema

        labels = [f"item {k} (selection row {_row(td)})" for k, td in enumerate(slices)]
        require_one_schema(list(zip(labels, slices, strict=True)), "ted_collate")
        raise  # same schema: another reason, e.g. slices of different lengths


def _row(td: TensorDictBase) -> str:
    rows = td.get("selection_index", None)
    return str(int(rows.reshape(-1)[0])) if rows is not None and rows.numel() else "?"


def no_collate(item: TensorDictBase) -> TensorDictBase:
    """``collate_fn`` for ``DataLoader(stream, batch_size=None)``: hand items over unchanged
    (torch's default would iterate the TensorDict's rows)."""
    return item


EPISODE_BUFFER = 8  # episodes' rows kept per process (fetched ones, from a bucket root)
# Partitions a process keeps open (their readers and maps, ~26 maps a DROID range; no file
# descriptor: episode_warehouse/file_maps.py); the least recently read is closed past it, so
# a selection over thousands of partitions holds a bounded number of maps (docs/loading.md).
OPEN_PARTITIONS = 256
DECODE_MODES = ("item", "batch")


def _decode_mode(decode: str, who: str) -> str:
    if decode not in DECODE_MODES:
        raise ConfigError(
            f"decode must be one of {DECODE_MODES}, not {decode!r}",
            subject=who,
            fix='pass decode="batch" to decode whole batches in ted_collate',
        )
    return decode


class _TedCache:
    """Per-process cache of opened TEDs (not pickled): the readers of the selection's
    partitions (the :data:`OPEN_PARTITIONS` most recently read), their whole memory-mapped TEDs
    where asked for, and a bounded buffer of episodes' rows.

    Every read is of the version the selection is pinned to (:mod:`~episode_warehouse.loading.
    selection`): a partition's first read in an epoch compares its published version with the
    pin, and a rebuilt one is refused (:class:`StaleSelectionError`) or, with the selection's
    ``on_rebuild="refresh"``, its rows re-resolved (:attr:`start`) and the new version pinned. A
    reader closed by the LRU and opened again within the epoch opens the pinned version."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        # each selected row's first step in the pinned TED (re-resolved on a refresh)
        self.start = np.asarray(selection.start, dtype=np.int64).copy()
        self.pins = dict(selection.records)
        self._open: dict[tuple[str, str], TensorDictBase] = {}
        self._readers: OrderedDict[tuple[str, str], TedReader] = OrderedDict()
        self._episodes: OrderedDict[int, TensorDictBase] = OrderedDict()
        self._fetched_earlier = 0  # bytes fetched by readers of versions since replaced
        self._checked: set[tuple[str, str]] = set()  # partitions checked against the pin
        self._root: Root | None = None
        self._lock = threading.Lock()  # read-ahead threads open readers concurrently

    def __getstate__(self):
        return {**self.__dict__, "_open": {}, "_readers": OrderedDict(), "_episodes": OrderedDict(),
                "_checked": set(), "_lock": None}  # fmt: skip

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.Lock())

    def get(self, source: str, partition: str) -> TensorDictBase:
        """The whole TED of a partition, memory-mapped (random access: step windows,
        statistics); from a bucket root it is downloaded into the cache once."""
        key = (source, partition)
        reader = self.reader(source, partition)  # also marks it the most recently read
        whole = self._open.get(key)
        if whole is None:
            whole = reader.whole()
            if reader.record.get("version") != self._pin(key).get("version"):  # gone meanwhile
                raise self._stale(key, "was replaced while it was being fetched")
            self._open[key] = whole
        return whole

    def _pin(self, key: tuple[str, str]) -> dict:
        return self.pins.get(f"{key[0]}:{key[1]}", {})

    def _stale(self, key: tuple[str, str], what: str) -> StaleSelectionError:
        return self.selection.stale(*key, what)

    def reader(self, source: str, partition: str) -> TedReader:
        """The partition's reader, of the pinned version (see the class)."""
        key = (source, partition)
        with self._lock:
            known = self._readers.get(key)
            if known is None or key not in self._checked:
                opened = self._open_pinned(key, known)
                if opened is not known:
                    if known is not None:
                        self._fetched_earlier += known.bytes_fetched
                    self._open.pop(key, None)  # a whole TED of the reader it replaces
                    self._readers[key] = known = opened
            self._readers.move_to_end(key)
            while len(self._readers) > OPEN_PARTITIONS:
                closed, old = self._readers.popitem(last=False)
                self._fetched_earlier += old.bytes_fetched
                self._open.pop(closed, None)
            return known

    def _open_pinned(self, key: tuple[str, str], known: TedReader | None) -> TedReader:
        """The reader of ``key``'s pinned version: checked against the published version at
        the partition's first read of the epoch (refused, or refreshed where the selection
        asks); reopened within the epoch (closed by the LRU), the pinned version itself."""
        if self._root is None:  # parsed once per process
            self._root = self.selection.reader_root()
        artifact = self._root.artifact(artifact_name("ted", *key))
        current = artifact.read()[0]
        pin = self._pin(key)
        if key not in self._checked:
            self._checked.add(key)
            if not current:
                raise self._stale(key, "was dropped since the selection was made")
            # the same version: its maps and cached blocks stay
            same = known is not None and known.record == current
            reader = known if known is not None and same else TedReader(artifact, current)
            if same_version(pin, current):
                return reader
            # another version: refused, or (on_rebuild="refresh") the rows re-resolved in it
            self.start[self.selection.rows_of(*key)] = self.selection.starts_in(
                *key, current, reader.episodes
            )
            self.pins[f"{key[0]}:{key[1]}"] = current
            log.info("%s:%s was rebuilt: its selection rows re-resolved", *key)
            return reader
        if current == pin:
            return TedReader(artifact, current)
        if not artifact.keeps(pin):  # a folder's replaced version is gone
            what = "was rebuilt" if current else "was dropped"
            raise self._stale(key, f"{what} during the epoch and its version is gone")
        return TedReader(artifact, pin)  # a bucket keeps a replaced version for a day

    def new_epoch(self) -> None:
        """Check each partition against its pin again at its next read (and forget the
        episodes held): a rebuilt partition is refused, or refreshed, from the next epoch on.
        Within an epoch a partition is read from the version it began on."""
        with self._lock:
            self._checked.clear()
            self._episodes.clear()

    @property
    def bytes_fetched(self) -> int:
        """Bytes this process fetched from object storage (0 for a local root)."""
        return self._fetched_earlier + sum(t.bytes_fetched for t in self._readers.values())

    def mapped(self, i: int) -> bool:
        """Whether selected episode ``i``'s TED is memory-mapped here (its files on this
        machine): a batch of its slices is read at once (:mod:`~episode_warehouse.loading.
        batch_read`)."""
        s = self.selection
        return self.reader(s.source[i], s.partition[i]).mapped_rows() is not None

    def read_ahead(self, first: int | None) -> int:
        """Episodes a stream reads ahead, as the reader of its first episode's partition asks
        (0 where rows are memory-mapped; one root's partitions are read alike): one record
        read, not one per partition of the selection."""
        if first is None:
            return 0
        s = self.selection
        return self.reader(s.source[first], s.partition[first]).read_ahead

    def fetch_episode(self, i: int) -> TensorDictBase:
        """All steps of selected episode ``i`` (one range per file from a bucket)."""
        s = self.selection
        reader = self.reader(s.source[i], s.partition[i])
        return reader.read(int(self.start[i]), int(s.length[i]))

    def _episode(self, i: int, ahead: ReadAhead | None) -> TensorDictBase:
        if i in self._episodes:
            self._episodes.move_to_end(i)
            return self._episodes[i]
        td = ahead.take(i) if ahead is not None else self.fetch_episode(i)
        self._episodes[i] = td
        while len(self._episodes) > EPISODE_BUFFER:
            self._episodes.popitem(last=False)
        return td

    def read(
        self, i: int, offset: int, length: int, ahead: ReadAhead | None = None
    ) -> TensorDictBase:
        """Steps [offset, offset+length) of selected episode ``i``, plus ``selection_index``
        (= i, the row of the selection, to map items back to the catalog) and ``step`` (each
        step's index within its episode)."""
        out = self._episode(i, ahead)[offset : offset + length]
        if get_worker_info() is not None:
            # a slice's storage is the whole memory-mapped TED (or fetched episode): a worker
            # must send a copy of it, never the view (see shared_batches._reduce)
            from episode_warehouse.loading.shared_batches import take_over_pickling

            take_over_pickling()
        out["selection_index"] = torch.full((length,), i, dtype=torch.int64)
        out["step"] = torch.arange(offset, offset + length, dtype=torch.int64)
        return out


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

    def __init__(self, selection: Selection, slice_len: int, *, decode: str = "item") -> None:
        self.decode = _decode_mode(decode, "EpisodeSliceDataset")
        if slice_len < 1:
            raise ConfigError("slice_len must be >= 1", subject="EpisodeSliceDataset")
        self.cache = _TedCache(selection)
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

    def __getitem__(self, k: int) -> TensorDictBase | SliceRef:
        """Slice ``k``: read (``decode="item"``), or a reference ``ted_collate`` reads with
        its batch (``decode="batch"``)."""
        row, offset = int(self._episode[k]), int(self._offset[k])
        if self.decode == "batch" and self.cache.mapped(row):
            return SliceRef(self.cache, row, offset, self.slice_len)
        return self.cache.read(row, offset, self.slice_len)


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
        decode: ``"item"`` (default): each item is its slice read and decoded;
            ``"batch"``: items are :class:`~episode_warehouse.loading.batch_read.SliceRef`
            (nothing read) and ``ted_collate`` reads each batch at once, its frames decoded
            straight into the batch in the worker (:mod:`~episode_warehouse.loading.
            batch_read`): the same values, at the decoder's speed. Slices from a bucket root
            are read ahead and yielded decoded either way.
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
        decode: str = "item",
    ) -> None:
        super().__init__()
        self.decode = _decode_mode(decode, "EpisodeStream")
        self.cache = _TedCache(selection)
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
        depth = self.cache.read_ahead(int(runs[0]) if len(runs) else None)
        with ReadAhead(self.cache.fetch_episode, runs.tolist(), depth) as ahead:
            previous = -1
            for row, offset, length in items:
                self._position += 1
                if row != previous:  # a new run: its episode is the next one fetched
                    self.cache._episodes.pop(int(row), None)
                previous = row
                if self.decode == "batch" and self.cache.mapped(int(row)):
                    yield SliceRef(self.cache, int(row), int(offset), int(length))
                else:
                    yield self.cache.read(int(row), int(offset), int(length), ahead)
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
