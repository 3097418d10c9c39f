"""Hostile and malformed input (issue #21): every case refused in one line naming the file, the
member or key and the fix; nothing published; other partitions byte-identical.

Inputs are built here in the exact formats (Dopamine gzip .npy files, WebDataset tars of
pickled episodes, PNG files) and then damaged the way an attacker or a careless producer would.
"""

from __future__ import annotations

import gzip
import io
import pickle
import shutil
import struct
import tarfile
import zlib

import numpy as np
import pytest

from episode_warehouse.blobstore import open_blob_store
from episode_warehouse.errors import (
    CatalogQueryError,
    CorruptInputError,
    ForbiddenPickleError,
    LimitExceededError,
)
from episode_warehouse.export import ExportRequest, export_lerobot
from episode_warehouse.incremental import build_if_changed, published
from episode_warehouse.limits import InputLimits
from episode_warehouse.loading import Selection, select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset, file_name
from episode_warehouse.sources.atari.mirror import mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from episode_warehouse.sources.openx.decode import decode_shards
from episode_warehouse.sources.openx.shards import list_shards
from episode_warehouse.stages import build_ted_stage
from episode_warehouse.storage.local import LocalRoot
from tests.reliability.conftest import snapshot
from warehouse_fixtures.openx_writer import DatasetSpec, add_member, make_episode

# --- Atari: Dopamine checkpoints ---------------------------------------------------------------


def _load(path):
    with gzip.open(path) as fh:
        return np.load(io.BytesIO(fh.read()))


def _save(path, array):
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        np.save(gz, array, allow_pickle=False)


@pytest.fixture
def atari(tmp_path, demo_fixtures):
    """A local mirror of the demo's Pong/5 and Pong/1, and a warehouse with Pong/1 built."""
    mirror = tmp_path / "mirror"
    for key in ("Pong/5", "Pong/1"):
        shutil.copytree(demo_fixtures / "atari-bucket" / "dqn" / key, mirror / key)
    layout = WarehouseLayout.local(tmp_path / "wh")
    _atari_build(mirror, layout, "Pong/1")
    return mirror, layout


def _atari_build(mirror, layout, key):
    game, run = key.split("/")
    mirror_run(
        open_blob_store(str(mirror)),
        game,
        int(run),
        layout.raw_dir("atari", key),
        CheckpointSubset("all"),
        root=layout.root,
        code_version="t",
    )
    decode_atari(layout, key, code_version="t", workers=1)
    build_ted_stage(layout, "atari", key, code_version="t")


def _real_slots(mirror, suffix, n):
    """``n`` slots of checkpoint ``suffix`` of Pong/5 that hold real terminal rows."""
    terminal = _load(mirror / "Pong/5/replay_logs" / file_name("terminal", suffix))
    return np.flatnonzero(terminal == 1)[:n]


@pytest.mark.parametrize(
    ("element", "value", "message"),
    [
        ("terminal", 7, "holds terminal 7, which must be 0 or 1"),
        ("action", -5, "holds action -5, which must be 0-17"),
        ("action", 9999, "holds action 9999, which must be 0-17"),
        ("reward", np.nan, r"holds reward nan, which must be a clipped reward in \[-1, 1\]"),
        ("reward", np.inf, r"holds reward inf, which must be a clipped reward in \[-1, 1\]"),
        ("reward", 50.0, r"holds reward 50.0, which must be a clipped reward in \[-1, 1\]"),
    ],
)
def test_atari_values_outside_their_range(atari, element, value, message):
    mirror, layout = atari
    before = snapshot(layout.folder)
    path = mirror / "Pong/5/replay_logs" / file_name(element, 1)
    array = _load(path).copy()
    array[_real_slots(mirror, 1, 3)] = value
    _save(path, array)
    with pytest.raises(CorruptInputError, match=message) as err:
        _atari_build(mirror, layout, "Pong/5")
    assert f"$store${'_' + element}_ckpt.1.gz" in str(err.value) and "Fix:" in str(err.value)
    assert not layout.decoded_dir("atari", "Pong/5").exists()
    assert not layout.ted_dir("atari", "Pong/5").exists()
    after = snapshot(layout.folder)
    assert {k: v for k, v in after.items() if "Pong/5" not in k} == before


def test_two_files_for_one_atari_element(atari):
    mirror, layout = atari
    folder = mirror / "Pong/5/replay_logs"
    shutil.copy(folder / "$store$_action_ckpt.1.gz", folder / "action_ckpt.1.gz")
    with pytest.raises(CorruptInputError, match="two files hold the action of checkpoint 1") as e:
        _atari_build(mirror, layout, "Pong/5")
    assert "$store$_action_ckpt.1.gz" in str(e.value) and "action_ckpt.1.gz" in str(e.value)
    assert not layout.raw_dir("atari", "Pong/5").exists()


def test_a_ted_that_fails_its_checks_is_never_published(atari):
    mirror, layout = atari
    ted = layout.ted_dir("atari", "Pong/1")
    before = snapshot(ted)
    decoded = layout.decoded_dir("atari", "Pong/1")
    record = published(layout.root, decoded)
    # decoded episodes that no longer tile the rows (a decoder bug, a damaged folder)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(decoded / "episodes.parquet")
    table = table.set_column(2, "length", pc.add(table.column("length"), 1))
    pq.write_table(table, decoded / "episodes.parquet")
    (decoded / "meta.json").write_text(
        (decoded / "meta.json").read_text().replace(record.version, "0000000000000000")
    )
    with pytest.raises(CorruptInputError, match="episodes do not tile the 3229 rows"):
        build_ted_stage(layout, "atari", "Pong/1", code_version="t")
    assert snapshot(ted) == before  # the previous TED stays, the broken one never appears


# --- OpenX: WebDataset tars of pickled episodes --------------------------------------------------

SPEC = DatasetSpec("toto", image_size=16)


def _episode(rng, length=4):
    return make_episode(rng, SPEC, length)


def _shard(root, members, name="toto"):
    """A tar of ``members``: (name, bytes) or (name, ("symlink"|"hardlink", target))."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / f"{name}_00000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for member, payload in members:
            if isinstance(payload, tuple):
                info = tarfile.TarInfo(member)
                info.type = tarfile.SYMTYPE if payload[0] == "symlink" else tarfile.LNKTYPE
                info.linkname = payload[1]
                tar.addfile(info)
            else:
                add_member(tar, member, payload)
    return root


def _decode(root, tmp_path, name="toto", limits=None):
    target = tmp_path / "decoded"
    shards = list_shards(str(root), name).shards
    build_if_changed(
        LocalRoot(tmp_path), target, {"t": 1}, lambda tmp: decode_shards(shards, tmp, limits=limits)
    )
    return target


def _refused(root, tmp_path, error, match, **kwargs):
    with pytest.raises(error, match=match) as err:
        _decode(root, tmp_path, **kwargs)
    assert "Fix:" in str(err.value) or isinstance(err.value, LimitExceededError | CorruptInputError)
    assert not (tmp_path / "decoded").exists()
    assert not list(tmp_path.glob(".staging-*"))
    return str(err.value)


def _pickled(episode):
    return pickle.dumps(episode, protocol=4)


def test_object_arrays_are_refused_naming_shard_member_and_key(tmp_path):
    rng = np.random.default_rng(0)
    episode = _episode(rng)
    episode["steps"][0]["action"] = np.array([{"a": 1}, "str", 3.0], dtype=object)
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    text = _refused(root, tmp_path, CorruptInputError, r"step 0 action has dtype \|O \(object\)")
    assert "toto_00000.tar:e0.data.pickle" in text


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (np.array(["left"]), "unicode"),
        (np.array([b"xx"]), "bytes"),
        (np.zeros(2, dtype="V4"), "void"),
        (np.array([1 + 2j], dtype=np.complex64), "complex"),
    ],
)
def test_other_non_numeric_dtypes_are_refused(tmp_path, value, kind):
    episode = _episode(np.random.default_rng(1))
    for step in episode["steps"]:
        step["reward" if kind == "complex" else "action"] = value
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    key = "reward" if kind == "complex" else "action"
    _refused(root, tmp_path, CorruptInputError, rf"step 0 {key} has dtype .* \({kind}\)")


class _Raw:
    """A pickle-level payload: ``__reduce__`` returns exactly what the attacker wrote."""

    def __init__(self, reduce):
        self.reduce = reduce

    def __reduce__(self):
        return self.reduce


def _reconstruct():
    return np._core.multiarray._reconstruct


def test_an_array_without_its_state_is_refused(tmp_path):
    episode = _episode(np.random.default_rng(2))
    episode["steps"][1]["action"] = _Raw((_reconstruct(), (np.ndarray, (4096,), b"b")))
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(root, tmp_path, CorruptInputError, "without its data .* uninitialized memory")


def test_an_array_declaring_more_than_it_carries_is_refused(tmp_path):
    state = (1, (10**11,), np.dtype("float32"), False, b"\0" * 64)
    episode = _episode(np.random.default_rng(3))
    episode["steps"][0]["action"] = _Raw((_reconstruct(), (np.ndarray, (0,), b"b"), state))
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(root, tmp_path, CorruptInputError, r"declares \(100000000000,\) float32")


def test_bytearray_from_a_count_is_refused(tmp_path):
    episode = _episode(np.random.default_rng(4))
    episode["steps"][0]["extra"] = _Raw((bytearray, (10**12,)))
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(root, tmp_path, ForbiddenPickleError, r"allocates bytearray\(1000000000000\)")


def test_a_pickle_that_repeats_one_large_step_is_bounded(tmp_path):
    rng = np.random.default_rng(5)
    big = {"observation": {"state": np.ones(1 << 18, dtype=np.float32)},  # 1 MiB
           "action": np.zeros(2), "reward": np.float32(0), "discount": np.float32(1),
           "is_first": np.bool_(False), "is_last": np.bool_(False),
           "is_terminal": np.bool_(False), "language_instruction": "x"}  # fmt: skip
    payload = pickle.dumps({"steps": [big] * 3000}, protocol=4)  # the memo: one step, 3000 refs
    assert len(payload) < 2 << 20
    root = _shard(tmp_path / "src", [("e0.data.pickle", payload)])
    text = _refused(root, tmp_path, LimitExceededError, "decodes to more than")
    assert "EPISODE_WAREHOUSE_LIMITS" in text
    del rng


def _png_declaring(width, height):
    """A valid PNG signature and IHDR declaring ``width`` x ``height``, with a tiny body."""

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 99))


def test_an_image_over_the_pixel_limit_is_refused_before_decoding(tmp_path):
    episode = _episode(np.random.default_rng(6))
    episode["steps"][2]["observation"]["image"] = {
        "bytes": _png_declaring(16000, 16000),
        "path": None,
    }
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(root, tmp_path, LimitExceededError, "declares 16000x16000 pixels, over the limit")


def test_too_many_steps_is_refused(tmp_path):
    episode = _episode(np.random.default_rng(7), length=30)
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(
        root,
        tmp_path,
        LimitExceededError,
        "30 steps, over the limit of 20",
        limits=InputLimits(max_steps=20),
    )


@pytest.mark.parametrize(
    ("member", "payload"),
    [
        # mtime=0: the gzip header carries no clock (each xdist worker collects the same id)
        ("e0.data.pickle.gz", gzip.compress(b"\0" * (1 << 20), mtime=0)),
        ("e0.meta.mp", b"\x81\xa1a\x01"),
        ("e0.meta.pth", b"garbage that torch.load would choke on"),
        ("e0.json", b"{}"),
    ],
    ids=["gzip", "msgpack", "torch", "json"],
)
def test_members_other_than_data_pickle_are_refused_unread(tmp_path, member, payload):
    good = _pickled(_episode(np.random.default_rng(8)))
    root = _shard(tmp_path / "src", [("e1.data.pickle", good), (member, payload)])
    text = _refused(root, tmp_path, CorruptInputError, "only <key>.data.pickle members are read")
    assert f"toto_00000.tar:{member}" in text


@pytest.mark.parametrize(
    ("members", "match"),
    [
        ([("e0.data.pickle", ("symlink", "/etc/passwd"))], "symbolic link"),
        (
            [("e1.data.pickle", "GOOD"), ("e2.data.pickle", ("hardlink", "e1.data.pickle"))],
            "hard link",
        ),
        ([("__e3.data.pickle", "GOOD")], "hidden member name '__e3.data.pickle'"),
        ([(".e4.data.pickle", "GOOD")], "hidden member name '.e4.data.pickle'"),
        ([("e5.data.pickle", "GOOD"), ("e5.data.pickle", "GOOD")], "second member with the key"),
    ],  # fmt: skip
)
def test_members_that_would_vanish_are_refused_by_name(tmp_path, members, match):
    good = _pickled(_episode(np.random.default_rng(9)))
    members = [(m, good if p == "GOOD" else p) for m, p in members]
    root = _shard(tmp_path / "src", members)
    _refused(root, tmp_path, CorruptInputError, match)


def test_instructions_must_be_one_text_per_episode(tmp_path):
    episode = _episode(np.random.default_rng(10))
    for step in episode["steps"]:
        step["language_instruction"] = np.array([1, 2, 3])
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(root, tmp_path, CorruptInputError, "step 0 language_instruction is a ndarray")
    episode = _episode(np.random.default_rng(10))
    episode["steps"][2]["language_instruction"] = "something else"
    shutil.rmtree(tmp_path / "src")
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    _refused(
        root, tmp_path, CorruptInputError, "step 2 language_instruction 'something else' differs"
    )


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("reward", np.float32("nan"), "step 1 reward is NaN"),
        ("reward", np.float32("inf"), "step 1 reward is infinite"),
        ("is_terminal", np.float32(1.0), "step 0 is_terminal is float32, must be a boolean"),
        ("action", np.array(["up"]), r"step 0 action has dtype <U2 \(unicode\)"),
    ],
)
def test_openx_values_get_a_clear_message(tmp_path, key, value, match):
    episode = _episode(np.random.default_rng(11))
    for t, step in enumerate(episode["steps"]):
        if key != "reward" or t == 1:
            step[key] = value
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    text = _refused(root, tmp_path, CorruptInputError, match)
    assert text.startswith(str(root / "toto" / "toto_00000.tar")) or "toto_00000.tar:e0" in text


# --- Selections -------------------------------------------------------------------------------


def test_selections_must_match_the_catalog(atari, tmp_path):
    _, layout = atari
    from episode_warehouse.stages import publish_catalog_rows

    publish_catalog_rows(layout, "atari", "Pong/1", code_version="t", run_id="r")
    query = "SELECT source, partition, episode, {} FROM episodes WHERE episode = 1"
    good = select_episodes(query.format("start, length"), root=layout.folder)
    start, length = int(good.start[0]), int(good.length[0])
    outside = f"outside the TED's episode \\(start {start}"
    for columns, match in (
        ("start, length + 40 AS length", f"length {length + 40}, {outside}"),
        ("-30 AS start, length", f"start -30 length {length}, {outside}"),
    ):
        with pytest.raises(CatalogQueryError, match=match) as err:
            select_episodes(query.format(columns), root=layout.folder)
        assert "Fix: select episode, start and length from the episodes view" in str(err.value)
        rows = [tuple(r) for r in zip(good.source, good.partition, good.episode.tolist(),
                                      [start if "-30" not in columns else -30],
                                      [length + 40 if "40" in columns else length],
                                      strict=True)]  # fmt: skip
        with pytest.raises(CatalogQueryError, match=match):
            export_lerobot(ExportRequest("fab", str(layout.folder), rows), tmp_path / "fab")
    inside = select_episodes(query.format("start + 1 AS start, length - 2 AS length"),
                             root=layout.folder)  # fmt: skip
    assert (int(inside.start[0]), int(inside.length[0])) == (start + 1, length - 2)
    with pytest.raises(CatalogQueryError, match="episode 999 .* no such episode"):
        Selection.from_rows([("atari", "Pong/1", 999, 0, 3)], root=layout.folder)
    assert not (tmp_path / "fab").exists()


def test_a_ted_failing_its_consistency_check_stays_in_staging(atari):
    """The blocking ted_consistency check runs in staging: NaN rewards never reach open_ted."""
    _, layout = atari
    ted = layout.ted_dir("atari", "Pong/1")
    before = snapshot(ted)
    decoded = layout.decoded_dir("atari", "Pong/1")
    # a damaged decoded folder (decoders refuse NaN themselves); a new file, not written in
    # place: the TED hard-links the decoded arrays, and the warehouse never rewrites a file
    path = decoded / "arrays" / "reward.npy"
    reward = np.load(path)
    reward[5] = np.nan
    path.unlink()
    np.save(path, reward)
    record = published(layout.root, decoded)
    (decoded / "meta.json").write_text(
        (decoded / "meta.json").read_text().replace(record.version, "0000000000000000")
    )
    with pytest.raises(CorruptInputError, match="consistency check: 1 rewards are NaN"):
        build_ted_stage(layout, "atari", "Pong/1", code_version="t")
    assert snapshot(ted) == before


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_openx_webdataset_nonfinite_actions_are_refused_by_the_shared_rule(tmp_path, value):
    """#42: NaN and inf actions reached the TED, statistics and exports with exit 0."""
    episode = _episode(np.random.default_rng(12))
    action = np.array(episode["steps"][2]["action"], copy=True)
    action.reshape(-1)[0] = value
    episode["steps"][2]["action"] = action
    root = _shard(tmp_path / "src", [("e0.data.pickle", _pickled(episode))])
    text = _refused(root, tmp_path, CorruptInputError, r"action is (nan|inf) at episode 0")
    assert "step 2" in text and "toto_00000.tar" in text
