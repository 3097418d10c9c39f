"""The one incremental rule: skip what is up to date, build aside, publish whole, never
overwrite what the warehouse did not write."""

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError, ForeignArtifactError
from episode_warehouse.incremental import build_if_changed, fingerprint, published
from episode_warehouse.records import Record
from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.ted.record import TedRecord


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
    first = build_if_changed(
        LocalRoot(tmp_path), target, {"source": "v1", "code_version": "1"}, _writer(calls, "one")
    )
    assert first.rebuilt and calls == ["one"]
    assert (target / "data.txt").read_text() == "one"
    record = json.loads((target / "meta.json").read_text())
    assert record == {
        "rows": 3,
        "inputs": {"source": "v1", "code_version": "1"},
        "version": fingerprint({"source": "v1", "code_version": "1"}),
    }
    again = build_if_changed(
        LocalRoot(tmp_path), target, {"code_version": "1", "source": "v1"}, _writer(calls, "x")
    )
    assert not again.rebuilt and again.version == first.version and calls == ["one"]
    changed = build_if_changed(
        LocalRoot(tmp_path), target, {"source": "v2", "code_version": "1"}, _writer(calls, "two")
    )
    assert changed.rebuilt and changed.version != first.version
    assert (target / "data.txt").read_text() == "two"
    assert published(LocalRoot(tmp_path), target) == changed.meta
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")] == []


def test_a_failing_build_keeps_the_previous_version(tmp_path):
    target = tmp_path / "artifact"
    build_if_changed(LocalRoot(tmp_path), target, {"v": 1}, _writer([], "good"))

    def broken(tmp):
        (tmp / "data.txt").write_text("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        build_if_changed(LocalRoot(tmp_path), target, {"v": 2}, broken)
    assert (target / "data.txt").read_text() == "good"
    assert published(LocalRoot(tmp_path), target).inputs == {"v": 1}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")] == []


def test_files_it_did_not_write_are_never_replaced(tmp_path):
    target = tmp_path / "artifact"
    target.mkdir()
    (target / "precious.txt").write_text("mine")
    with pytest.raises(ForeignArtifactError, match="did not write") as err:
        build_if_changed(LocalRoot(tmp_path), target, {"v": 1}, _writer([], "x"))
    assert str(target) in str(err.value) and "Fix:" in str(err.value)
    assert sorted(p.name for p in target.iterdir()) == ["precious.txt"]


@dataclass(frozen=True, kw_only=True)
class _NestedRecord(Record):
    FILE: ClassVar[str] = "meta/export.json"
    rows: int


def test_a_record_type_names_its_file_and_its_fields(tmp_path):
    target = tmp_path / "dataset"
    root = LocalRoot(tmp_path)
    built = build_if_changed(root, target, {"v": 1}, _writer([], "x"), record_type=_NestedRecord)
    assert json.loads((target / "meta" / "export.json").read_text())["version"] == built.version
    assert built.meta.rows == 1 and not (target / "meta.json").exists()
    again = build_if_changed(root, target, {"v": 1}, _writer([], "y"), record_type=_NestedRecord)
    assert not again.rebuilt and again.meta == built.meta


def test_a_record_missing_a_field_is_never_published(tmp_path):
    target = tmp_path / "artifact"
    root = LocalRoot(tmp_path)
    build_if_changed(root, target, {"v": 1}, _writer([], "good"), record_type=_NestedRecord)

    def no_rows(tmp):
        (tmp / "data.txt").write_text("bad")
        return {"other": 1}

    with pytest.raises(CorruptInputError, match="lacks 'rows'") as err:
        build_if_changed(root, tmp_path / "other", {"v": 2}, no_rows, record_type=_NestedRecord)
    assert "other/meta/export.json (as built)" in str(err.value)
    assert not (tmp_path / "other").exists()
    assert (target / "data.txt").read_text() == "good"


def test_a_record_of_the_wrong_types_is_refused_by_field(tmp_path):
    """A record is input like any other (a bucket's is written by anyone who can write it)."""
    target = tmp_path / "artifact" / "meta"
    target.mkdir(parents=True)
    (target / "export.json").write_text(json.dumps({"version": "v", "inputs": {}, "rows": "12"}))
    with pytest.raises(CorruptInputError, match="'rows' is str, not int") as err:
        published(LocalRoot(tmp_path), tmp_path / "artifact", _NestedRecord)
    assert str(target / "export.json") in str(err.value)
    (target / "export.json").write_text(json.dumps(["not", "a", "record"]))
    with pytest.raises(CorruptInputError, match="not a JSON object"):
        published(LocalRoot(tmp_path), tmp_path / "artifact", _NestedRecord)
    (target / "export.json").write_text(json.dumps({"version": "v", "rows": 3, "seen": [1]}))
    record = published(LocalRoot(tmp_path), tmp_path / "artifact", _NestedRecord)
    assert record.rows == 3 and record.extra == {"seen": [1]}  # unknown fields kept
    assert record.to_json() == {"version": "v", "inputs": {}, "rows": 3, "seen": [1]}


@pytest.mark.parametrize("stage", ["decoded", "ted"])
def test_an_artifact_of_an_older_format_is_rebuilt_by_the_run_its_error_names(tmp_path, stage):
    """The format version is an input of every stage: an artifact an older warehouse wrote
    (older format, up to date by its own fingerprint) is refused by the reader, and the
    materialization the error names rebuilds it instead of calling it up to date."""
    import numpy as np

    from episode_warehouse import open_ted
    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.errors import FormatVersionError
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
    from episode_warehouse.sources.atari.mirror import mirror_run
    from episode_warehouse.sources.atari.stage import decode_atari
    from episode_warehouse.stages import build_ted_stage
    from warehouse_fixtures.atari_game import play_episode
    from warehouse_fixtures.dopamine_writer import write_run

    rng = np.random.default_rng(0)
    write_run(tmp_path / "src/Pong/1/replay_logs", [play_episode(rng, 50) for _ in range(3)], 400)
    layout = WarehouseLayout.local(tmp_path / "wh")
    mirror_run(open_blob_store(str(tmp_path / "src")), "Pong", 1, layout.raw_dir("atari", "Pong/1"),
               CheckpointSubset("all"), root=layout.root, code_version="t")  # fmt: skip

    def build():
        return (
            decode_atari(layout, "Pong/1", code_version="t", workers=1),
            build_ted_stage(layout, "atari", "Pong/1", code_version="t"),
        )

    build()
    folder, version = (
        (layout.decoded_dir("atari", "Pong/1"), DecodedRecord.FORMAT_VERSION)
        if stage == "decoded"
        else (layout.ted_dir("atari", "Pong/1"), TedRecord.FORMAT_VERSION)
    )
    meta = json.loads((folder / "meta.json").read_text())
    meta["format_version"] = version - 1  # what the previous warehouse version wrote ...
    meta["inputs"]["format"] = meta["inputs"]["format"].replace(f"v{version}", f"v{version - 1}")
    meta["version"] = fingerprint(meta["inputs"])  # ... up to date by its own inputs
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(FormatVersionError, match=f"re-materialize the {stage} stage"):
        open_decoded(folder) if stage == "decoded" else open_ted("atari", "Pong/1", layout.folder)
    decoded, ted = build()
    assert (decoded if stage == "decoded" else ted).rebuilt
    assert (decoded if stage == "decoded" else ted).meta.format_version == version
    assert open_ted("atari", "Pong/1", layout.folder)["next", "reward"].shape == (150, 1)
