"""Each source's own assets (raw and decoded), one module each, and their registry."""

from assets.sources import atari, lerobot, minari, openx

# the registry of the code location: one line per source (its module's ASSETS)
SOURCE_ASSETS = (
    atari.ASSETS,
    openx.ASSETS,
    lerobot.ASSETS,
    minari.ASSETS,
)
