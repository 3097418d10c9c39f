"""Each process's cache of the TEDs a selection reads: the readers of its partitions (the
:data:`OPEN_PARTITIONS` most recently read), their whole memory-mapped TEDs where asked for, a
bounded buffer of episodes' rows, and the pin of every read to the selection's versions. Every
dataset over a selection reads through one (``torch_datasets``, ``windows``, ``statistics``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import numpy as np
import torch
from tensordict import TensorDictBase
from torch.utils.data import get_worker_info

from episode_warehouse.errors import StaleSelectionError
from episode_warehouse.loading.read_ahead import ReadAhead
from episode_warehouse.loading.selection import Selection, same_version
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root
from episode_warehouse.ted.fetched import FetchedRows
from episode_warehouse.ted.reader import TedReader

log = logging.getLogger(__name__)

EPISODE_BUFFER = 8  # episodes' rows kept per process (fetched ones, from a bucket root)
# Partitions a process keeps open (their readers and maps, ~26 maps a DROID range; no file
# descriptor: episode_warehouse/file_maps.py); the least recently read is closed past it, so
# a selection over thousands of partitions holds a bounded number of maps (docs/loading.md).
OPEN_PARTITIONS = 256


class TedCache:
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
        self._episodes: OrderedDict[int, FetchedRows] = OrderedDict()  # from a bucket
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
        """Steps a stream reads ahead, as the reader of its first episode's partition asks
        (0 where rows are memory-mapped; one root's partitions are read alike): one record
        read, not one per partition of the selection."""
        if first is None:
            return 0
        s = self.selection
        return self.reader(s.source[first], s.partition[first]).read_ahead

    def fetch_episode(self, i: int) -> FetchedRows:
        """All steps of selected episode ``i``, fetched from a bucket (one range per file)."""
        s = self.selection
        reader = self.reader(s.source[i], s.partition[i])
        return reader.fetch(int(self.start[i]), int(s.length[i]))

    def fetched(self, i: int, ahead: ReadAhead | None = None) -> FetchedRows:
        """Selected episode ``i`` fetched (by ``ahead``, a stream's read-ahead, where given),
        kept among the last :data:`EPISODE_BUFFER` ones."""
        if i in self._episodes:
            self._episodes.move_to_end(i)
            return self._episodes[i]
        fetched = ahead.take(i) if ahead is not None else self.fetch_episode(i)
        self._episodes[i] = fetched
        while len(self._episodes) > EPISODE_BUFFER:
            self._episodes.popitem(last=False)
        return fetched

    def read(self, i: int, offset: int, length: int) -> TensorDictBase:
        """Steps [offset, offset+length) of selected episode ``i`` (see :meth:`labelled`)."""
        if self.mapped(i):
            s = self.selection
            reader = self.reader(s.source[i], s.partition[i])
            episode = reader.read(int(self.start[i]), int(s.length[i]))  # views, kept
        else:
            episode = self.fetched(i).assembled()
        return self.labelled(episode[offset : offset + length], i, offset)

    def labelled(self, out: TensorDictBase, i: int, offset: int) -> TensorDictBase:
        """Steps ``out`` (from ``offset`` of selected episode ``i``) plus ``selection_index``
        (= i, the row of the selection, to map items back to the catalog) and ``step`` (each
        step's index within its episode)."""
        length = out.batch_size[0]
        if get_worker_info() is not None:
            # a slice's storage is the whole memory-mapped TED (or fetched episode): a worker
            # must send a copy of it, never the view (see shared_batches._reduce)
            from episode_warehouse.batches.slots import take_over_pickling

            take_over_pickling()
        out["selection_index"] = torch.full((length,), i, dtype=torch.int64)
        out["step"] = torch.arange(offset, offset + length, dtype=torch.int64)
        return out
