"""VLADataset: a mixture of standardized partitions streamed as items of TorchRL's VLA schema.

Sampling is Octo's (``make_interleaved_dataset``): each item picks a dataset by the mixture's
weights, then a step of it uniformly. There is no shuffle buffer: every step is read where it
lies (memory-mapped), so the sample is uniform over the whole mixture and memory is bounded by
one batch, where Octo's ``shuffle_buffer_size`` of frames holds hundreds of GB and still mixes
only what it has seen recently.

An item (``window`` W history steps, ``chunk`` K future actions, views resized to
``image_sizes``)::

    observation/image/<view>        uint8 [W, C, H, W]   zeros where the dataset lacks the view
    observation/pad_mask_dict/<view> bool [W]            False there (Octo's pad_mask_dict)
    observation/pad_mask_dict/state  bool [W]
    observation/state               float32 [W, S]       normalized; zero padded to the mix's S
    observation/timestep_is_pad     bool [W]             history before the episode's start
    action                          float32 [W, A]       the standardized action (not normalized)
    vla_action/chunk                float32 [W, K, A]    normalized; the last action repeated
    action_is_pad                   bool [W, K]          past the episode's end
    action_dim_is_pad               bool [A]             dimensions this dataset does not have
    language_instruction, dataset_name   strings

Items collate with ``ted_collate`` (DataLoader ``collate_fn``) into batches that
``torchrl.data.vla.validate_vla_tensordict`` accepts; with ``batch_size=B`` the dataset yields
those batches itself, each read at once (``vla_batch.py``; 2.35x the item path on
``bench.vla_mixture``).

Order, workers, ranks and resume: item ``i`` of epoch ``e`` is drawn from a generator seeded
with ``(seed, e, i // 4096)``, so any process computes any item without the others; items are
dealt round-robin to ranks, then to DataLoader workers; :meth:`state_dict` is a shard's count
of delivered items and :meth:`load_state_dict` skips them (``StatefulDataLoader`` calls both in
each worker). An epoch is ``num_samples`` items (default: the kept steps of the mixture).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tensordict import NonTensorData, TensorDict, TensorDictBase
from torch.utils.data import IterableDataset, get_worker_info

from episode_warehouse.batches.refs import RowsRef, stack_slices
from episode_warehouse.errors import ConfigError
from episode_warehouse.sources import registry
from episode_warehouse.standardized.configs import VIEWS
from episode_warehouse.standardized.images import resize
from episode_warehouse.standardized.mixtures import Mix, range_share, resolve, sampling_weights
from episode_warehouse.standardized.normalize import NORMALIZATIONS, Normalizer
from episode_warehouse.standardized.reader import Opened, locate
from episode_warehouse.standardized.vla_batch import read_items
from episode_warehouse.storage import parse_root

BLOCK = 4096  # items drawn per generator


@dataclass
class _Part:
    name: str
    opened: Opened
    weight: float
    action: Normalizer
    state: Normalizer | None
    starts: np.ndarray  # each kept step's episode start (standardized rows)
    ends: np.ndarray  # ... and last row
    rows: np.ndarray | None = None  # the standardized rows drawn from (None: every row)

    @property
    def size(self) -> int:
        return self.opened.meta.rows if self.rows is None else len(self.rows)


def _selected_rows(opened: Opened, ranges: np.ndarray):
    """The standardized rows whose TED rows lie in one of ``ranges`` (``[start, stop)`` TED
    rows, a selection's rows of this partition), and for each row the first and last
    standardized row of its range: a window or chunk never leaves the selected steps."""
    ted_row = np.asarray(opened.array("ted_row"))
    order = np.argsort(ranges[:, 0], kind="stable")
    first, stop = ranges[order, 0], ranges[order, 1]
    at = np.searchsorted(first, ted_row, side="right") - 1
    inside = (at >= 0) & (ted_row < stop[np.maximum(at, 0)])
    if len(first) > 1 and (first[1:] < np.maximum.accumulate(stop)[:-1]).any():
        raise ConfigError(
            "the selection's rows of one partition overlap: a step would be drawn twice as often",
            subject=f"VLADataset selection of {opened.meta.source}:{opened.meta.partition}",
            fix="select each step once (DISTINCT, or ranges that do not overlap)",
        )
    rows = np.flatnonzero(inside)
    group = at[rows]
    change = np.r_[True, group[1:] != group[:-1]]
    begin = rows[change][np.cumsum(change) - 1]
    end_at = np.r_[np.flatnonzero(change)[1:], len(rows)] - 1
    end = rows[end_at][np.cumsum(change) - 1]
    starts = np.zeros(len(ted_row), np.int64)
    ends = np.zeros(len(ted_row), np.int64)
    starts[rows], ends[rows] = begin, end
    return rows, starts, ends


def _ranges_by_partition(selection) -> dict[tuple[str, str], np.ndarray]:
    """(source, partition) -> the selection's ``[start, stop)`` TED rows there."""
    out: dict[tuple[str, str], list] = {}
    for source, partition, _, start, length in selection.rows():
        out.setdefault((source, partition), []).append((start, start + length))
    return {key: np.asarray(ranges, dtype=np.int64) for key, ranges in out.items()}


def _episode_bounds(opened: Opened) -> tuple[np.ndarray, np.ndarray]:
    init = np.asarray(opened.array("is_init"))
    done = np.asarray(opened.array("done"))
    first = np.flatnonzero(init)
    last = np.flatnonzero(done)
    ep = np.cumsum(init) - 1
    return first[ep], last[ep]


@dataclass(frozen=True)
class VLARef(RowsRef):
    """Item ``row`` of part ``part`` of a VLADataset, not yet read: ``ted_collate`` reads a
    batch of them at once (``vla_batch.read_items``), :meth:`read` one alone."""

    ds: VLADataset
    part: int
    row: int

    def read(self) -> TensorDict:
        return self.ds.item(self.part, self.row)

    @classmethod
    def read_batch(cls, refs: list) -> TensorDictBase:
        if any(r.ds is not refs[0].ds for r in refs):
            return stack_slices([r.read() for r in refs])
        return read_items(refs[0].ds, [(r.part, r.row) for r in refs])


class VLADataset(IterableDataset):
    """Items of a mixture in TorchRL's VLA schema (see the module's docstring).

    Items are :class:`VLARef` references (which part, which step): ``DataLoader(ds,
    batch_size=B, collate_fn=ted_collate)`` reads each batch at once in the worker (one gather
    and one resize per dataset of the batch, written into the worker's shared memory);
    ``item.read()`` reads one alone.

    Args:
        mix: a named mix, a list of ``(dataset, weight)``, or a SQL selection with ``partition``
            and ``weight`` columns (see :func:`mixture_weights`; balanced by transitions).
        root: the warehouse root.
        image_sizes: view -> ``(H, W)``; views left out keep their native size, which must then
            agree across the mixture. Octo's pretraining: ``{"primary": (256, 256), "wrist":
            (128, 128)}``.
        window: history steps W (Octo's ``window_size``); chunk: actions K per step
            (``action_horizon``).
        normalization: ``"normal"`` (Octo: z-score, gripper left as is), ``"bounds_q99"``
            (OpenVLA: q01..q99 to [-1, 1], clipped), or ``"none"``; every dataset with its own
            statistics; a dimension that never varies becomes 0.
        seed: sampling seed. num_samples: items per epoch. rank, world_size: default to
            torch.distributed's when it is initialized.
        views: the views to deliver (default all three).
        selection: a :class:`~episode_warehouse.loading.Selection` of steps (openpi's
            successful, non-idle steps of DROID; rows may be parts of episodes): only those
            steps are drawn, each range a unit of its own (a window or chunk is padded at its
            ends, as at an episode's); datasets of the mix it does not select are left out.
        batch_size: yield whole batches of this many items (the items, in the same order, that
            ``batch_size=None`` yields as references), read the same way; load with
            ``DataLoader(ds, batch_size=None, collate_fn=ted_collate)``.

    Raises:
        ConfigError: an empty mixture, an unknown normalization, views whose sizes differ
            without a size given, a window or chunk below 1.
    """

    def __init__(
        self,
        mix: Mix,
        root=None,
        *,
        image_sizes: dict[str, tuple[int, int]] | None = None,
        window: int = 1,
        chunk: int = 1,
        normalization: str = "normal",
        seed: int = 0,
        num_samples: int | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        views: tuple[str, ...] = VIEWS,
        balance: bool = True,
        selection=None,
        batch_size: int | None = None,
    ) -> None:
        super().__init__()
        if normalization not in NORMALIZATIONS:
            raise ConfigError(
                f"normalization {normalization!r} is not one of {NORMALIZATIONS}",
                subject="VLADataset",
            )
        if window < 1 or chunk < 1:
            raise ConfigError("window and chunk must be >= 1", subject="VLADataset")
        if set(views) - set(VIEWS):
            raise ConfigError(f"views must be among {VIEWS}", subject="VLADataset")
        self.window, self.chunk, self.seed, self.views = window, chunk, seed, tuple(views)
        self.normalization = normalization
        self.parts: list[_Part] = []
        root = parse_root(root)  # once: every partition is read through this reader's root
        entries = resolve(mix, root)
        weights = sampling_weights(entries, balance)
        chosen = _ranges_by_partition(selection) if selection is not None else None
        for source, partition, _, stats in entries:
            opened = locate(source, partition, root)
            name = registry.dataset_name(source, partition)
            weight = weights[name] * range_share(stats)  # a shard range: its share
            rows = None
            if chosen is None:
                starts, ends = _episode_bounds(opened)
            elif (source, partition) not in chosen:
                continue
            else:
                rows, starts, ends = _selected_rows(opened, chosen[(source, partition)])
                weight = weights[name]  # shared below among the dataset's parts by their rows
            self.parts.append(
                _Part(
                    name, opened, weight,
                    Normalizer.of(stats["action"], normalization),
                    Normalizer.of(stats["proprio"], normalization) if "proprio" in stats else None,
                    starts, ends, rows,
                )
            )  # fmt: skip
        self.parts = [p for p in self.parts if p.size]
        if chosen is not None:  # a dataset's weight, shared by its parts' selected steps
            selected: dict[str, int] = {}
            for p in self.parts:
                selected[p.name] = selected.get(p.name, 0) + p.size
            for p in self.parts:
                p.weight *= p.size / selected[p.name]
        if not self.parts:
            raise ConfigError(
                "the selection selects no step of the mixture's datasets",
                subject="VLADataset",
                fix="select steps of the datasets the mix names (same root, standardized)",
            )
        self.weights = np.array([p.weight for p in self.parts])
        self.weights = self.weights / self.weights.sum()
        self.action_dim = max(p.opened.meta.action_dim for p in self.parts)
        self.state_dim = max(p.opened.meta.state_dim for p in self.parts)
        self.image_sizes = self._sizes(image_sizes or {})
        self.num_samples = num_samples or sum(p.size for p in self.parts)
        dist = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = rank if rank is not None else (torch.distributed.get_rank() if dist else 0)
        self.world_size = world_size or (torch.distributed.get_world_size() if dist else 1)
        self.epoch = 0
        self._position = 0
        self._block: tuple | None = None  # the last block of draws: (epoch, block), parts, u
        if batch_size is not None and batch_size < 1:
            raise ConfigError("batch_size must be >= 1 (or None)", subject="VLADataset")
        self.batch_size = batch_size

    def _sizes(self, given: dict) -> dict[str, tuple[int, int]]:
        sizes: dict[str, tuple[int, int]] = {}
        for view in self.views:
            if view in given:
                height, width = (int(x) for x in given[view])
                sizes[view] = (height, width)
                continue
            native = {tuple(p.opened.meta.image_shapes[view][1:]) for p in self.parts
                      if view in p.opened.meta.image_shapes}  # fmt: skip
            if len(native) > 1:
                raise ConfigError(
                    f"the {view} view has different sizes across the mixture: {sorted(native)}",
                    subject="VLADataset",
                    fix=f"pass image_sizes={{{view!r}: (H, W)}}",
                )
            if native:
                height, width = native.pop()
                sizes[view] = (height, width)
        return sizes

    # -- sampling ----------------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self._position = epoch, 0

    def _shard(self) -> tuple[int, int]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return self.rank * workers + worker, self.world_size * workers

    def draw(self, index: int) -> tuple[int, int]:
        """Item ``index`` of the current epoch: (part, standardized row)."""
        block, at = divmod(index, BLOCK)
        if self._block is None or self._block[0] != (self.epoch, block):
            rng = np.random.default_rng([self.seed, self.epoch, block])
            chosen = rng.choice(len(self.parts), size=BLOCK, p=self.weights)
            self._block = ((self.epoch, block), chosen, rng.random(BLOCK))  # drawn once a block
        _, parts, u = self._block
        part = int(parts[at])
        size = self.parts[part].size
        k = min(int(u[at] * size), size - 1)
        rows = self.parts[part].rows
        return part, k if rows is None else int(rows[k])

    def __len__(self) -> int:
        """Items of this shard an epoch (batches, with ``batch_size``; the last may be short)."""
        shard, shards = self._shard()
        items = len(range(shard, self.num_samples, shards))
        return items if self.batch_size is None else -(-items // self.batch_size)

    def __iter__(self):
        shard, shards = self._shard()
        indices = range(shard, self.num_samples, shards)[self._position :]
        if self.batch_size is None:
            for index in indices:
                self._position += 1
                yield VLARef(self, *self.draw(index))
        else:
            for first in range(0, len(indices), self.batch_size):
                chunk = indices[first : first + self.batch_size]
                batch = read_items(self, [self.draw(index) for index in chunk])
                self._position += len(chunk)
                yield batch
        self.epoch, self._position = self.epoch + 1, 0

    def state_dict(self) -> dict:
        shard, shards = self._shard()
        return {"epoch": self.epoch, "position": self._position, "shard": shard,
                "shards": shards, "seed": self.seed}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        shard, shards = self._shard()
        if (state.get("shard"), state.get("shards"), state.get("seed")) != (
            shard,
            shards,
            self.seed,
        ):
            raise ConfigError(
                "this state was saved by another shard layout or seed",
                subject="VLADataset.load_state_dict",
                fix="resume with the same seed, world size and DataLoader workers",
            )
        self.epoch, self._position = int(state["epoch"]), int(state["position"])

    # -- one item ----------------------------------------------------------------------------

    def item(self, part_index: int, row: int) -> TensorDict:
        """The item at standardized ``row`` of part ``part_index`` (see the module docstring)."""
        part = self.parts[part_index]
        opened, meta = part.opened, part.opened.meta
        start, end = int(part.starts[row]), int(part.ends[row])
        history = np.arange(row - self.window + 1, row + 1)
        timestep_pad = history < start
        history = np.maximum(history, start)
        future = history[:, None] + np.arange(self.chunk)[None, :]
        action_pad = future > end
        future = np.minimum(future, end)
        actions = np.asarray(opened.array("action")[np.unique(np.r_[history, future.ravel()])])
        lookup = {r: i for i, r in enumerate(np.unique(np.r_[history, future.ravel()]))}
        raw = actions[[lookup[r] for r in history]]
        chunk = actions[[lookup[r] for r in future.ravel()]].reshape(self.window, self.chunk, -1)
        a = meta.action_dim
        out = TensorDict(batch_size=[])
        out["action"] = torch.from_numpy(self._pad(raw, self.action_dim))
        out["vla_action", "chunk"] = torch.from_numpy(
            self._pad(part.action(chunk), self.action_dim)
        )
        out["action_is_pad"] = torch.from_numpy(action_pad)
        out["action_dim_is_pad"] = torch.arange(self.action_dim) >= a
        if part.state is not None:
            state = part.state(np.asarray(opened.array("state")[history]))
        else:
            state = np.zeros((self.window, 0), np.float32)
        out["observation", "state"] = torch.from_numpy(self._pad(state, self.state_dim))
        has_state = torch.full((self.window,), part.state is not None)
        out["observation", "pad_mask_dict", "state"] = has_state
        out["observation", "timestep_is_pad"] = torch.from_numpy(timestep_pad)
        ted_rows = np.asarray(opened.array("ted_row")[history])
        for view in self.views:
            size = self.image_sizes.get(view)
            frames = opened.frames(view)
            present = frames is not None and size is not None
            out["observation", "pad_mask_dict", view] = torch.full((self.window,), present)
            if size is None:
                continue
            if frames is None:
                out["observation", "image", view] = torch.zeros(self.window, 3, *size,
                                                                dtype=torch.uint8)  # fmt: skip
                continue
            out["observation", "image", view] = resize(np.asarray(frames[ted_rows]), size)
        texts = opened.instructions[np.asarray(opened.array("instruction")[row : row + 1])]
        out["language_instruction"] = NonTensorData(str(texts[0]))
        out["dataset_name"] = NonTensorData(part.name)
        return out

    @staticmethod
    def _pad(values: np.ndarray, width: int) -> np.ndarray:
        values = np.asarray(values, np.float32)
        missing = width - values.shape[-1]
        if missing <= 0:
            return np.ascontiguousarray(values)
        return np.concatenate([values, np.zeros((*values.shape[:-1], missing), np.float32)], -1)

    def metadata(self) -> dict:
        """``{dataset: torchrl.data.vla.RobotDatasetMetadata}`` of every dataset of the mix."""
        from torchrl.data.vla import RobotDatasetMetadata

        from episode_warehouse.standardized.configs import DatasetConfig

        out = {}
        for part in self.parts:
            meta = part.opened.meta
            stats = part.action.stats
            gripper = np.asarray(part.opened.array("action")[:, -1])
            binary = meta.action_encoding in ("EEF_POS", "JOINT_POS") and bool(
                np.isin(gripper, (0.0, 1.0)).all()
            )
            config = DatasetConfig(None, action=meta.action_encoding)
            out[part.name] = RobotDatasetMetadata(
                part.name,
                embodiment_id=meta.robot_type or part.name,
                action_dim=meta.action_dim,
                action_space=config.action_space,
                gripper_mode="binary" if binary else "continuous",
                control_frequency_hz=meta.fps,
                camera_keys=tuple(
                    ("observation", "image", v) for v, f in meta.views.items() if f is not None
                ),  # fmt: skip
                action_mean=torch.tensor(stats["mean"]),
                action_std=torch.tensor(stats["std"]),
                action_low=torch.tensor(stats["q01"]),
                action_high=torch.tensor(stats["q99"]),
                source_url=f"{meta.source}:{meta.partition}",
            )
        return out
