"""How a resource field gets its value: explicit config, else an environment variable, else the
documented default, resolved when a run starts (never when the code location is imported).

Each resource field is ``None`` unless the run's config sets it (the CLI does, for ``--root``);
``setting`` then reads the variable through Dagster's ``EnvVar``, at that moment, so a variable
changed after the code server started takes effect on the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dagster as dg

from episode_warehouse.errors import ConfigError


def setting[T](
    value: T | None,
    env: str,
    default: T,
    *,
    cast: Callable[[str], T] = str,  # type: ignore[assignment]
    choices: Sequence[T] | None = None,
) -> T:
    """``value`` if set, else ``$env`` (cast), else ``default``.

    Raises:
        ConfigError: the variable does not parse, or is not one of ``choices``.
    """
    if value is not None:
        return value
    raw = dg.EnvVar(env).get_value()
    if raw is None or raw == "":
        return default
    try:
        result = cast(raw)
    except ValueError:
        raise ConfigError(
            f"not a valid value: {raw!r}", subject=env, fix=f"set {env} to a {cast.__name__}"
        ) from None
    if choices is not None and result not in choices:
        raise ConfigError(
            f"{raw!r} is not one of {list(choices)}",
            subject=env,
            fix=f"set {env} to {' or '.join(repr(c) for c in choices)}",
        )
    return result
