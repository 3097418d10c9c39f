"""PNG plots kept small (tens of KB) for materialization metadata."""

from __future__ import annotations

import base64
import io

import numpy as np
import pyarrow as pa


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)
    return buf.getvalue()


def distributions_png(episodes: pa.Table) -> bytes:
    """Histograms of episode return and length (matplotlib, Agg backend); a source without
    rewards (null returns) gets a note instead of a return histogram."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    returns = episodes.column("return").drop_null().to_numpy()
    lengths = episodes.column("length").to_numpy()
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 2.4))
    try:
        if len(returns):
            axes[0].hist(returns, bins=min(30, max(5, len(returns) // 2)), color="#4c72b0")
            axes[0].set_title(f"return (n={len(returns)}, mean {returns.mean():.2f})", fontsize=9)
        else:
            axes[0].text(0.5, 0.5, "no rewards recorded", ha="center", va="center", fontsize=9)
            axes[0].set_axis_off()
        axes[1].hist(lengths, bins=min(30, max(5, len(lengths) // 2)), color="#55a868")
        axes[1].set_title(f"length (mean {lengths.mean():.0f} steps)", fontsize=9)
        for ax in axes:
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        return _png(fig)
    finally:
        plt.close(fig)


def thumbnails_png(frames: list[np.ndarray], size: int = 64) -> bytes:
    """A horizontal strip of frames (HxW gray or CxHxW color), each scaled to ``size``."""
    from PIL import Image

    tiles = []
    for frame in frames:
        arr = np.asarray(frame)
        if arr.ndim == 3 and arr.shape[0] in (1, 3, 4):
            arr = arr.transpose(1, 2, 0)
        img = Image.fromarray(arr.squeeze() if arr.ndim == 3 and arr.shape[2] == 1 else arr)
        tiles.append(img.convert("RGB").resize((size, size)))
    strip = Image.new("RGB", (size * len(tiles) + 2 * (len(tiles) - 1), size), "white")
    for i, tile in enumerate(tiles):
        strip.paste(tile, (i * (size + 2), 0))
    buf = io.BytesIO()
    strip.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def markdown_image(png: bytes, alt: str) -> str:
    """Markdown with the PNG inlined as a data URI (the Dagster UI renders it)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def statistics_png(stats: dict) -> bytes:
    """Per-dimension action (and proprio) statistics of a standardized partition: mean and
    std as bars with whiskers, q01..q99 as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in ("action", "proprio") if k in stats]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.4 * len(keys), 2.4), squeeze=False)
    try:
        for ax, key in zip(axes[0], keys, strict=True):
            s = stats[key]
            x = np.arange(len(s["mean"]))
            ax.fill_between(x, s["q01"], s["q99"], color="#c7d4e8", step="mid", label="q01..q99")
            ax.errorbar(x, s["mean"], yerr=s["std"], fmt="o", ms=3, color="#4c72b0",
                        label="mean ± std")  # fmt: skip
            ax.set_title(f"{key} (n={stats['num_transitions']})", fontsize=9)
            ax.set_xticks(x)
            ax.tick_params(labelsize=7)
        axes[0][0].legend(fontsize=6)
        fig.tight_layout()
        return _png(fig)
    finally:
        plt.close(fig)
