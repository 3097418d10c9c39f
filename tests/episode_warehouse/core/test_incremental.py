"""The one incremental rule: skip what is up to date, build aside, publish whole, never
overwrite what the warehouse did not write."""

import json

import pytest

from episode_warehouse.errors import ForeignArtifactError
from episode_warehouse.incremental import build_if_changed, fingerprint, published


def test_fingerprint_is_stable_and_order_free():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert fingerprint({"a": 1}) != fingerprint({"a": "1"})
    assert len(fingerprint("x")) == 16 and int(fingerprint("x"), 16) >= 0


def _writer(calls, text):
    def build(tmp):
        calls.append(text)
        (tmp / "data.txt").write_text(text)
        return {"rows": len(text)}

    return build


def test_builds_once_per_inputs_and_records_them(tmp_path):
    target, calls = tmp_path / "artifact", []
    first = build_if_changed(target, {"source": "v1", "code_version": "1"}, _writer(calls, "one"))
    assert first.rebuilt and calls == ["one"]
    assert (target / "data.txt").read_text() == "one"
    record = json.loads((target / "meta.json").read_text())
    assert record == {
        "rows": 3,
        "inputs": {"source": "v1", "code_version": "1"},
        "version": fingerprint({"source": "v1", "code_version": "1"}),
    }
    again = build_if_changed(target, {"code_version": "1", "source": "v1"}, _writer(calls, "x"))
    assert not again.rebuilt and again.version == first.version and calls == ["one"]
    changed = build_if_changed(target, {"source": "v2", "code_version": "1"}, _writer(calls, "two"))
    assert changed.rebuilt and changed.version != first.version
    assert (target / "data.txt").read_text() == "two" and published(target) == changed.meta
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")] == []


def test_a_failing_build_keeps_the_previous_version(tmp_path):
    target = tmp_path / "artifact"
    build_if_changed(target, {"v": 1}, _writer([], "good"))

    def broken(tmp):
        (tmp / "data.txt").write_text("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        build_if_changed(target, {"v": 2}, broken)
    assert (target / "data.txt").read_text() == "good"
    assert published(target)["inputs"] == {"v": 1}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")] == []


def test_files_it_did_not_write_are_never_replaced(tmp_path):
    target = tmp_path / "artifact"
    target.mkdir()
    (target / "precious.txt").write_text("mine")
    with pytest.raises(ForeignArtifactError, match="did not write") as err:
        build_if_changed(target, {"v": 1}, _writer([], "x"))
    assert str(target) in str(err.value) and "Fix:" in str(err.value)
    assert sorted(p.name for p in target.iterdir()) == ["precious.txt"]


def test_a_custom_record_path(tmp_path):
    target = tmp_path / "dataset"
    built = build_if_changed(target, {"v": 1}, _writer([], "x"), record="meta/export.json")
    assert json.loads((target / "meta" / "export.json").read_text())["version"] == built.version
    assert not build_if_changed(
        target, {"v": 1}, _writer([], "y"), record="meta/export.json"
    ).rebuilt
