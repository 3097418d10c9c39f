"""One schema per batch: the TEDs whose steps are stacked or concatenated must have the same
keys, dtypes and per-step shapes.

Each source has one schema (both Atari layouts give the same TED keys), but two sources do not
(Atari frames and OpenX cameras), and neither do two LeRobot datasets of different robots.
Stacking such steps fails deep inside tensordict; this check says which keys differ and where
they come from first.
"""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import TensorDictBase

from episode_warehouse.errors import ConfigError


def schema_of(td: TensorDictBase) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every leaf of ``td`` as ``"a/b"`` -> (dtype, shape of one step)."""
    out = {}
    for key in td.keys(True, True):
        value = td.get(key)
        name = key if isinstance(key, str) else "/".join(key)
        out[name] = (str(value.dtype).removeprefix("torch."), tuple(value.shape[td.batch_dims :]))
    return out


def _differences(a: dict, b: dict) -> list[str]:
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    out = []
    if only_a:
        out.append(f"only in the first: {', '.join(only_a[:6])}")
    if only_b:
        out.append(f"only in the other: {', '.join(only_b[:6])}")
    out += [f"{k} is {a[k][0]} {list(a[k][1])} vs {b[k][0]} {list(b[k][1])}" for k in changed[:4]]
    return out


def require_one_schema(named: Sequence[tuple[str, TensorDictBase]], what: str) -> None:
    """Raise unless every TED of ``named`` ((label, td) pairs) has the first one's schema.

    Raises:
        ConfigError: naming the two labels and the keys, dtypes or shapes that differ.
    """
    if len(named) < 2:
        return
    first_label, first = named[0]
    reference = schema_of(first)
    for label, td in named[1:]:
        diff = _differences(reference, schema_of(td))
        if diff:
            raise ConfigError(
                f"{first_label} and {label} have different TED schemas ({'; '.join(diff)}), so "
                "their steps cannot be stacked into one batch",
                subject=what,
                fix="select partitions of one source (one schema) per batch, or mix them with "
                "EpisodeStream(..., batch_size=None) and no_collate, batching each source "
                "yourself",
            )
