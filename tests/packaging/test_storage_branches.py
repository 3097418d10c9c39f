"""Local and bucket roots differ only inside ``episode_warehouse/storage`` (#49): no code outside
it asks a root or a layout which kind it is. The import contract keeps its bucket module to
itself (pyproject.toml); this test keeps the questions out."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("episode_warehouse", "warehouse_cli", "assets", "resources", "sensors")
# the ways the kind of a warehouse root was asked before the storage package did the work
QUESTIONS = {
    "is_bucket_root": re.compile(r"\bis_bucket_root\b"),
    'startswith("gs://")': re.compile(r"""startswith\(\s*["']gs://"""),
    ".bucket is (not) None": re.compile(r"\.bucket\s+is\s+(not\s+)?None"),
    "if ....bucket": re.compile(r"\bif\s+(not\s+)?[\w.]*\.bucket\b(?!\()"),
    ".remote(...) is None": re.compile(r"\.remote\([^)]*\)\s+is\s+(not\s+)?None"),
    "isinstance(..., a root or artifact class)": re.compile(
        r"isinstance\([^)]*\b(BucketRoot|LocalRoot|RemoteArtifact|LocalArtifact|Bucket)\b"
    ),
}


def _asked(text: str) -> list[str]:
    return [name for name, pattern in QUESTIONS.items() if pattern.search(text)]


def test_no_code_outside_storage_asks_a_root_its_kind():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(ROOT / "episode_warehouse" / "storage"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{number}: {q}" for q in _asked(line)]
    assert found == [], "\n".join(found)


def test_the_questions_are_recognised():
    """Each pattern finds the line it was written for (the review's examples)."""
    assert _asked("    if layout.bucket is None:") == [".bucket is (not) None", "if ....bucket"]
    assert _asked("    where = url if layout.bucket else path") == ["if ....bucket"]
    assert _asked("    if request.bucket:") == ["if ....bucket"]
    assert _asked("    remote = root.remote(t, f); if root.remote(t, f) is None:") == [
        ".remote(...) is None"
    ]
    assert _asked("saved if is_bucket_root(saved) else Path(saved)") == ["is_bucket_root"]
    assert _asked('    if url.startswith("gs://"):') == ['startswith("gs://")']
    assert _asked("if isinstance(root, BucketRoot):") == [
        "isinstance(..., a root or artifact class)"
    ]


def test_a_settings_scheme_is_read_in_one_place():
    """``gcs.url_scheme``: what every store, source and root asks instead of ``startswith``."""
    from episode_warehouse.gcs import url_scheme

    assert [url_scheme(v) for v in ("gs://b/p", "hf://datasets/o/r@v", "file:///x", "s3://b")] == [
        "gs", "hf", "file", "s3"
    ]  # fmt: skip
    assert [url_scheme(v) for v in ("warehouse-data", "/abs/gs://x", "gs:/b", "C:/data")] == [
        None, None, None, None
    ]  # fmt: skip
