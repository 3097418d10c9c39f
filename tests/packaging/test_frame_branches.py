"""Frames stored encoded and rows stored plain differ only inside ``episode_warehouse/frames``
(#72): ``FrameRows`` and ``PlainRows`` answer the same calls (``read_into``, ``window``,
``leaf``, ``stored_bytes``, ``blob``, ``preview``), so no reader outside the frames layer asks
which one it holds. Found by walking each module's syntax tree: every ``isinstance`` whose
classes include a reader-side frame type."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("episode_warehouse", "warehouse_cli", "assets", "resources", "sensors")
FRAMES = ROOT / "episode_warehouse" / "frames"
# what a reader gets for a TED file's rows, and its tensor
READER_TYPES = {"FrameRows", "PlainRows", "FrameTensor", "Rows", "Decoded"}


def branches(source: str) -> list[tuple[int, list[str]]]:
    """(line, the frame types asked about) of every ``isinstance`` on a reader's frame type."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
            continue
        if len(node.args) != 2:
            continue
        names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
        if names & READER_TYPES:
            found.append((node.lineno, sorted(names & READER_TYPES)))
    return found


def test_no_reader_outside_the_frames_layer_branches_on_how_frames_are_stored():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(FRAMES):
                continue
            found += [f"{path.relative_to(ROOT)}:{line}: {names}"
                      for line, names in branches(path.read_text())]  # fmt: skip
    assert found == [], "\n".join(found)


def test_the_branches_are_recognised():
    assert branches("if isinstance(rows, FrameRows):\n    pass") == [(1, ["FrameRows"])]
    assert branches("x = isinstance(leaf, (torch.Tensor, tensor.FrameTensor))") == [
        (1, ["FrameTensor"])
    ]
    assert branches("if isinstance(rows, np.ndarray):\n    pass") == []
