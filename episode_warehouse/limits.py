"""Bounds on what one input may expand to, checked before anything is allocated.

Nothing in a downloaded shard or checkpoint is trusted: sizes, shapes and counts it declares
are compared with these limits (and with the bytes actually present) first. The defaults are
far above any real dataset (OpenX episodes have at most a few thousand steps of images up to
640x480; Atari checkpoints are 1M steps) and can be raised per run
(``EPISODE_WAREHOUSE_LIMITS``: ``max_image_pixels=100000000,max_expansion=5000``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from episode_warehouse.errors import ConfigError

LIMITS_ENV = "EPISODE_WAREHOUSE_LIMITS"
# the fix an input over a limit names
LIMITS_FIX = f"raise the limit ({LIMITS_ENV}) only if the input is trusted"


@dataclass(frozen=True)
class InputLimits:
    """What one member of a shard (one episode) may hold.

    Attributes:
        max_steps: steps in one episode.
        max_image_pixels: pixels of one image, read from its header before it is decoded.
        max_member_bytes: bytes of one tar member (one pickled episode), before it is read.
        max_expansion: decoded bytes of one episode per byte of its member, plus
            ``expansion_slack_bytes`` (images decompress; numbers shared by reference in the
            pickle memo are counted once per use).
        expansion_slack_bytes: the fixed allowance on top of ``max_expansion``.
        max_record_bytes: bytes of one TFRecord record (one episode), declared or inflated;
            read in chunks, so memory follows the bytes present. Real episodes: RL Unplugged
            Atari up to 27,000 PNG frames (tens of MB), Open X-Embodiment up to ~150 MB.
        max_text_bytes: UTF-8 bytes of one text value (an instruction, a Minari Text leaf).
        max_texts: distinct texts of one text key in one partition (each is kept in the
            record, which every reader opens whole): instructions and missions repeat.
    """

    max_steps: int = 100_000
    max_image_pixels: int = 4096 * 4096
    max_member_bytes: int = 4 << 30
    max_expansion: int = 1000
    expansion_slack_bytes: int = 256 << 20
    max_record_bytes: int = 512 << 20
    max_text_bytes: int = 64 << 10
    max_texts: int = 100_000

    def decoded_budget(self, member_bytes: int) -> int:
        """The most bytes a member of ``member_bytes`` may decode to."""
        return member_bytes * self.max_expansion + self.expansion_slack_bytes

    @classmethod
    def parse(cls, text: str | None) -> InputLimits:
        """``name=value,name=value`` overrides of the defaults (empty: the defaults).

        Raises:
            ConfigError: an unknown name or a value that is not a positive integer.
        """
        limits = cls()
        if not text:
            return limits
        names = {f.name for f in fields(cls)}
        for part in text.split(","):
            name, _, value = part.strip().partition("=")
            if name not in names or not value.strip().isdigit() or int(value) <= 0:
                raise ConfigError(
                    f"not a limit setting: {part.strip()!r}",
                    subject=LIMITS_ENV,
                    fix=f"write name=positive_integer pairs, names: {', '.join(sorted(names))}",
                )
            limits = replace(limits, **{name: int(value)})
        return limits


def check_text(text: str, limits: InputLimits, *, what: str, subject: str) -> str:
    """``text`` when its UTF-8 form holds at most ``limits.max_text_bytes`` bytes.

    Raises:
        LimitExceededError: naming ``what`` and its size.
    """
    from episode_warehouse.errors import LimitExceededError

    if len(text) * 4 > limits.max_text_bytes and len(text.encode()) > limits.max_text_bytes:
        raise LimitExceededError(
            f"{what} is a text of {len(text.encode()):,} bytes, over the limit of "
            f"{limits.max_text_bytes:,}",
            subject=subject,
            fix=LIMITS_FIX,
        )
    return text
