"""Place Dopamine checkpoints on the global row stream and find the episodes in it.

The rules are those of ../shared/reference/atari-dqn-replay.md, section "How to map files back
to the stream". Everything here works on the small arrays (action, reward, terminal, counters);
observations are only touched for the few rows whose padding status depends on their content
(the leading rows of a chunk that follows a gap).

Vocabulary: ``g`` is the global row index (padding included) and row ``g`` lives in slot
``g % C``; a *placement* is the range of rows one file holds; a *chunk* is a maximal run of
recovered rows; a *fragment* is a maximal run of real rows of one episode inside a chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.sources.atari.checkpoint_reader import CheckpointMeta
from episode_warehouse.sources.atari.dopamine_files import file_name

log = logging.getLogger(__name__)
_FAR = np.int64(-(2**62))


@dataclass(frozen=True)
class Placement:
    """Checkpoint ``suffix`` holds rows [lo, hi); rows [new_lo, hi) are not in an earlier one."""

    suffix: int
    lo: int
    hi: int
    new_lo: int
    is_final: bool
    gap_before: str  # "" (adjacent), "lost_lap", "subset" or "start"


@dataclass(frozen=True)
class Run:
    """``length`` consecutive slots from ``slot`` of one file go to TED rows from ``row``."""

    slot: int
    row: int
    length: int


@dataclass
class StreamPlan:
    """Where every recovered real row comes from, and the fragments they form."""

    capacity: int
    stack_size: int
    placements: list[Placement]
    # per TED row (real rows only, in stream order)
    action: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    global_row: np.ndarray
    # per fragment
    fragment_start: np.ndarray
    fragment_length: np.ndarray
    fragment_true_start: np.ndarray
    fragment_first_suffix: np.ndarray
    fragment_last_suffix: np.ndarray
    # per checkpoint suffix: slot runs to copy into TED rows, and runs to verify (final log)
    copy_runs: dict[int, list[Run]] = field(default_factory=dict)
    verify_runs: dict[int, list[Run]] = field(default_factory=dict)
    padding_rows: int = 0
    lost_rows: int = 0

    @property
    def rows(self) -> int:
        return len(self.action)

    @property
    def fragment_ends_terminal(self) -> np.ndarray:
        if not len(self.fragment_start):
            return np.zeros(0, dtype=bool)
        return self.terminal[self.fragment_start + self.fragment_length - 1] == 1


def place_checkpoints(metas: list[CheckpointMeta]) -> list[Placement]:
    """Map each checkpoint (sorted by suffix) to the global rows it holds.

    Raises:
        CorruptInputError: capacities differ, counters go backwards, regular logs overlap, or a
            final log comes without the log before it.
    """
    placements: list[Placement] = []
    prev: Placement | None = None
    capacity = metas[0].capacity
    for m in metas:
        if m.capacity != capacity:
            raise CorruptInputError(
                f"capacity {m.capacity} differs from {capacity} of the other checkpoints",
                subject=str(m.observation_path),
            )
        c, a = capacity, m.add_count
        adjacent = prev is not None and prev.suffix == m.suffix - 1
        if a % c == c - 1 and (a >= c or m.suffix == 0):
            lo, hi, final = max(0, a - c), a, False
            if m.suffix == 0 and a == c - 1:
                lo, hi = 0, c - 1  # log 0: slot C-1 was never written
        else:
            if m.suffix > 0 and not adjacent:
                raise CorruptInputError(
                    f"checkpoint {m.suffix} is a final log (stored add_count {a} < capacity "
                    f"{c}); it can only be placed after checkpoint {m.suffix - 1}",
                    subject=str(m.observation_path),
                    fix=f"include checkpoint {m.suffix - 1} in the checkpoint subset",
                )
            p = prev.hi if (prev is not None and m.suffix > 0) else 0
            hi = p + (a - p) % c
            lo, final = max(0, hi - c), True
        if prev is not None and hi <= prev.hi and not final:
            raise CorruptInputError(
                f"add_count {a} does not grow past the previous checkpoint's {prev.hi}",
                subject=str(m.observation_path),
                fix="the run folder mixes files of different runs; re-mirror it",
            )
        new_lo = max(lo, prev.hi) if prev is not None else lo
        if prev is None:
            gap = "start" if lo > 0 else ""
            if m.suffix == 0 and lo > 0:
                gap = "lost_lap"
        elif lo > prev.hi:
            gap = "lost_lap" if adjacent else "subset"
        elif not adjacent:
            gap = "subset" if lo >= prev.hi else ""
        else:
            gap = ""
        if prev is not None and not final and lo < prev.hi:
            raise CorruptInputError(
                f"rows [{lo}, {hi}) overlap the previous checkpoint's rows up to {prev.hi}",
                subject=str(m.observation_path),
                fix="the run folder mixes files of different runs; re-mirror it",
            )
        placement = Placement(m.suffix, lo, hi, new_lo, final, gap)
        placements.append(placement)
        prev = placement
    return placements


def plan_stream(
    metas: list[CheckpointMeta],
    read_frames: Callable[[CheckpointMeta, list[int]], np.ndarray],
) -> StreamPlan:
    """Build the plan for checkpoints ``metas`` (sorted by suffix, at least one).

    Args:
        metas: the checkpoints to decode, sorted by suffix.
        read_frames: ``read_frames(meta, slots)`` returns those observation rows; called only
            for the up to K-1 leading rows of a chunk that follows a gap.
    """
    metas = sorted(metas, key=lambda m: m.suffix)
    placements = place_checkpoints(metas)
    c = metas[0].capacity
    k = metas[0].stack_size
    for m in metas:
        if m.stack_size != k:
            raise CorruptInputError(
                f"stack size {m.stack_size} differs from {k}", subject=str(m.observation_path)
            )

    parts_g: list[np.ndarray] = []
    parts_ckpt: list[np.ndarray] = []
    chunk_starts: list[int] = []
    chunk_kinds: list[str] = []
    for i, p in enumerate(placements):
        g = np.arange(p.new_lo, p.hi, dtype=np.int64)
        if not len(g):
            continue
        if p.new_lo != (placements[i - 1].hi if i else -1):
            chunk_starts.append(sum(len(x) for x in parts_g))
            chunk_kinds.append("stream_start" if p.new_lo == 0 else p.gap_before or "subset")
        parts_g.append(g)
        parts_ckpt.append(np.full(len(g), i, dtype=np.int32))
    g = np.concatenate(parts_g)
    ckpt = np.concatenate(parts_ckpt)
    slot = g % c
    action = np.empty(len(g), dtype=np.int32)
    reward = np.empty(len(g), dtype=np.float32)
    terminal = np.empty(len(g), dtype=np.uint8)
    for i, m in enumerate(metas):
        sel = ckpt == i
        values = (m.action[slot[sel]], m.reward[slot[sel]], m.terminal[slot[sel]])
        _check_values(m, slot[sel], *values)  # in the file's own dtypes, before any cast
        action[sel], reward[sel], terminal[sel] = values
    _check_final_overlaps(metas, placements, g, action, reward, terminal)

    padding, lost_lap_chunk = _classify_padding(
        metas, ckpt, slot, action, reward, terminal, chunk_starts, chunk_kinds, k, read_frames
    )
    real = np.flatnonzero(~padding)
    row_of = np.full(len(g), -1, dtype=np.int64)
    row_of[real] = np.arange(len(real))

    # Fragments: a new one after a terminal, after a hole in g, or at a chunk start.
    rg = g[real]
    new_frag = np.ones(len(real), dtype=bool)
    if len(real) > 1:
        new_frag[1:] = (terminal[real[:-1]] == 1) | (rg[1:] != rg[:-1] + 1)
    starts = np.flatnonzero(new_frag)
    lengths = np.diff(np.append(starts, len(real)))
    first_pos = real[starts]  # position in the recovered rows
    prev_is_padding = np.zeros(len(starts), dtype=bool)
    has_prev = first_pos > 0
    same_chunk = np.ones(len(starts), dtype=bool)
    chunk_of = np.searchsorted(np.asarray(chunk_starts), first_pos, side="right") - 1
    same_chunk[has_prev] = first_pos[has_prev] - 1 >= np.asarray(chunk_starts)[chunk_of[has_prev]]
    prev_is_padding[has_prev] = padding[first_pos[has_prev] - 1] & same_chunk[has_prev]
    first_real_of_chunk = ~_any_real_before_in_chunk(
        padding, first_pos, np.asarray(chunk_starts), chunk_of
    )
    true_start = prev_is_padding | (first_real_of_chunk & np.asarray(lost_lap_chunk)[chunk_of])
    suffixes = np.array([m.suffix for m in metas], dtype=np.int32)
    last_pos = real[starts + lengths - 1]

    plan = StreamPlan(
        capacity=c,
        stack_size=k,
        placements=placements,
        action=action[real],
        reward=reward[real],
        terminal=terminal[real],
        global_row=rg,
        fragment_start=starts.astype(np.int64),
        fragment_length=lengths.astype(np.int64),
        fragment_true_start=true_start,
        fragment_first_suffix=suffixes[ckpt[first_pos]],
        fragment_last_suffix=suffixes[ckpt[last_pos]],
        padding_rows=int(padding.sum()),
        lost_rows=int(
            sum(
                p.lo - (placements[i - 1].hi if i else 0)
                for i, p in enumerate(placements)
                if p.gap_before == "lost_lap"
            )
        ),
    )
    for i, m in enumerate(metas):
        sel = real[ckpt[real] == i]
        plan.copy_runs[m.suffix] = _runs(slot[sel], row_of[sel])
    for m, p in zip(metas, placements, strict=True):
        if p.is_final and p.lo < p.new_lo:
            pos = np.flatnonzero((g >= p.lo) & (g < p.new_lo) & ~padding)
            plan.verify_runs[m.suffix] = _runs(g[pos] % c, row_of[pos])
    log.info(
        "planned %d real rows in %d fragments from %d checkpoints (%d padding rows dropped)",
        plan.rows,
        len(starts),
        len(metas),
        plan.padding_rows,
    )
    return plan


def _any_real_before_in_chunk(padding, first_pos, chunk_starts, chunk_of) -> np.ndarray:
    """For each position, whether a real row precedes it inside its chunk."""
    real_cum = np.cumsum(~padding)
    before = real_cum[first_pos] - 1  # real rows up to and excluding first_pos
    at_chunk = np.where(chunk_starts[chunk_of] > 0, real_cum[chunk_starts[chunk_of] - 1], 0)
    return before - at_chunk > 0


def _classify_padding(
    metas, ckpt, slot, action, reward, terminal, chunk_starts, chunk_kinds, k, read_frames
):
    """Padding by position: K-1 rows after a terminal or at the stream start; after a gap, up to
    K-1 leading all-zero rows (their terminal was lost)."""
    n = len(slot)
    idx = np.arange(n, dtype=np.int64)
    starts = np.asarray(chunk_starts, dtype=np.int64)
    chunk_of = np.searchsorted(starts, idx, side="right") - 1
    term_pos = np.where(terminal == 1, idx, _FAR)
    prev_term = np.maximum.accumulate(np.concatenate(([_FAR], term_pos[:-1])))
    virtual = np.array(
        [
            s - 1 if kind == "stream_start" else _FAR
            for s, kind in zip(starts, chunk_kinds, strict=True)
        ],
        dtype=np.int64,
    )
    prev_term = np.where(prev_term >= starts[chunk_of], prev_term, virtual[chunk_of])
    padding = idx - prev_term <= k - 1
    lost_lap = []
    for s, kind in zip(starts, chunk_kinds, strict=True):
        lost_lap.append(kind == "lost_lap")
        if kind == "stream_start":
            continue
        lead = 0
        while lead < k - 1 and s + lead < n and chunk_of[s + lead] == chunk_of[s]:
            p = s + lead
            if action[p] != 0 or reward[p] != 0 or terminal[p] != 0:
                break
            frame = read_frames(metas[ckpt[p]], [int(slot[p])])
            if frame.any():
                break
            lead += 1
        padding[s : s + lead] = True
    return padding, lost_lap


ACTIONS = 18  # the ALE's full action set: every game's actions are indices into it


def _check_values(meta: CheckpointMeta, slots, action, reward, terminal) -> None:
    """The rows the stream uses from one checkpoint: terminal 0 or 1, an action of the ALE's
    set, a reward in [-1, 1] (Dopamine clips rewards before its agent stores them: anything
    else is not what the logger wrote; a terminal of 7 would merge episodes and make padding
    real steps).

    Raises:
        CorruptInputError: naming the file, the slot and the value.
    """
    with np.errstate(invalid="ignore"):
        reward_ok = np.abs(reward.astype(np.float64)) <= 1  # False for NaN and infinities
    checks = (
        ("terminal", terminal, (terminal != 0) & (terminal != 1), "must be 0 or 1"),
        ("action", action, (action < 0) | (action >= ACTIONS), f"must be 0-{ACTIONS - 1}"),
        ("reward", reward, ~reward_ok, "must be a clipped reward in [-1, 1]"),
    )
    for element, values, bad, rule in checks:
        if bad.any():
            pos = int(np.argmax(bad))
            value = values[pos].item()
            raise CorruptInputError(
                f"slot {int(slots[pos])} holds {element} {value!r}, which {rule} "
                f"({int(bad.sum())} such rows)",
                subject=str(meta.observation_path.parent / file_name(element, meta.suffix)),
                fix="the checkpoint is corrupt; re-mirror it, or leave it out of the subset",
            )


def _check_final_overlaps(metas, placements, g, action, reward, terminal) -> None:
    """The rows a final log shares with the log before it must be identical."""
    for m, p in zip(metas, placements, strict=True):
        if not p.is_final or p.lo >= p.new_lo:
            continue
        pos = np.flatnonzero((g >= p.lo) & (g < p.new_lo))
        s = g[pos] % m.capacity
        bad = (
            (m.action[s] != action[pos])
            | (m.reward[s] != reward[pos])
            | (m.terminal[s] != terminal[pos])
        )
        if bad.any():
            first = int(g[pos][np.argmax(bad)])
            raise CorruptInputError(
                f"the final log disagrees with checkpoint {m.suffix - 1} on row {first} of the "
                f"rows they share ({int(bad.sum())} rows differ): either a lap was lost before "
                "the final log, so its place in the stream cannot be proven, or it does not "
                "belong to this run",
                subject=str(m.observation_path),
                fix=f"leave checkpoint {m.suffix} out of the checkpoint subset",
            )


def _runs(slots: np.ndarray, rows: np.ndarray) -> list[Run]:
    """Group (slot, row) pairs into runs where both advance by one."""
    if not len(slots):
        return []
    brk = np.flatnonzero((np.diff(slots) != 1) | (np.diff(rows) != 1)) + 1
    bounds = np.concatenate(([0], brk, [len(slots)]))
    return [
        Run(int(slots[a]), int(rows[a]), int(b - a))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
