"""The fuzz tier (#42): every reader of outside input, fed the real samples of
``../shared/samples`` and our fixtures mutated at the byte and field level, ends in the
unmutated value or an error of our hierarchy, with memory under a bound and nothing written
outside its folder (``harness.ends_well``).

Where the format checksums its bytes (gzip, TFRecord) a byte mutation must give exactly the
unmutated value or an error. Where it does not (a pickle in a tar, Parquet pages, JSON fields),
a mutation may make another valid input: there the run must end in our error or in a value of
the unmutated one's schema (keys, dtypes, row shapes). ``./test`` runs each with a fixed seed
and a short budget (``FUZZ_EXAMPLES``, default 25); ``./test -m slow`` a long one.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from episode_warehouse.errors import CorruptInputError, WarehouseError
from episode_warehouse.guards.names import name_problem
from episode_warehouse.hub.client import check_hub_answer
from episode_warehouse.sources.atari.checkpoint_reader import read_checkpoint_meta, stream_rows
from episode_warehouse.sources.openx.rlds.features import parse_features
from episode_warehouse.storage.bucket.artifact import check_record
from tests.fuzz.harness import BUDGETS, ends_well, fuzz_settings
from tests.fuzz.mutations import byte_mutations, field_mutations, mutate_bytes, mutate_fields

_fresh = itertools.count()


def _folder(base: Path) -> Path:
    folder = base / f"x{next(_fresh)}"
    folder.mkdir()
    return folder


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _decoded_summary(folder: Path) -> dict:
    """Every array of a decoded folder by key: (dtype, shape, digest of the bytes)."""
    from episode_warehouse.decoded import open_decoded

    decoded = open_decoded(folder)
    return {
        key: (str(decoded.array(key).dtype), decoded.array(key).shape, _digest(decoded.array(key)))
        for key in sorted(decoded.arrays)
    }


def _schema(summary: dict) -> dict:
    return {key: (dtype, shape[1:]) for key, (dtype, shape, _) in summary.items()}


# --- RL Unplugged: gzip TFRecord files as DeepMind published them --------------------------


def _rlu_episodes(path: Path) -> tuple:
    """The reader's first pass over one file (what a decode worker runs), summarized."""
    from episode_warehouse.sources.atari.rlu_worker import scan_file
    from episode_warehouse.sources.source_file import SourceFile

    scan = scan_file(SourceFile(path.name, path=str(path)), 64 << 20)
    return (
        tuple(scan.lengths), tuple(scan.ended), tuple(scan.checkpoint_idx),
        tuple(scan.episode_idx), tuple(scan.recorded_return),
        _digest(*scan.actions), _digest(*scan.rewards),
    )  # fmt: skip


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("level", ["gzip", "tfrecord"])
def test_rl_unplugged_files(shared_samples, tmp_path, budget, level):
    real = shared_samples / "rl_unplugged_atari" / "Asterix" / "run_1-00000-of-00001"
    truth = _rlu_episodes(real)
    raw = real.read_bytes()
    inner = gzip.decompress(raw)

    @fuzz_settings(budget)
    @given(byte_mutations)
    def run(ops):
        folder = _folder(tmp_path)
        path = folder / real.name
        if level == "gzip":
            path.write_bytes(mutate_bytes(raw, ops))
        else:  # past the gzip checksum: the TFRecord's own checksums must catch it
            path.write_bytes(gzip.compress(mutate_bytes(inner, ops), mtime=0))
        got = ends_well(lambda: _rlu_episodes(path), sandbox=tmp_path)
        assert isinstance(got, WarehouseError) or got == truth

    run()


# --- RLDS: the real bridge sample, mirrored and decoded whole ---------------------------------


def _rlds_build(src: Path, work: Path) -> dict:
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx

    layout = WarehouseLayout.local(work)
    mirror_openx(
        str(src), "bridge", layout.raw_dir("openx", "bridge"), root=layout.root, code_version="t"
    )
    decode_openx(layout, "bridge", code_version="t")
    return _decoded_summary(layout.decoded_dir("openx", "bridge"))


@pytest.mark.parametrize("budget", BUDGETS)
def test_rlds_shards(shared_samples, tmp_path, budget):
    real = shared_samples / "rlds" / "bridge"
    truth = _rlds_build(shared_samples / "rlds", _folder(tmp_path))
    shard_name = next(p.name for p in (real / "1.0.0").iterdir() if ".tfrecord" in p.name)

    @fuzz_settings(budget)
    @given(byte_mutations)
    def run(ops):
        folder = _folder(tmp_path)
        shutil.copytree(real, folder / "src" / "bridge")
        shard = folder / "src" / "bridge" / "1.0.0" / shard_name
        shard.chmod(0o644)
        shard.write_bytes(mutate_bytes(shard.read_bytes(), ops))
        got = ends_well(lambda: _rlds_build(folder / "src", folder / "wh"), sandbox=tmp_path,
                        work=folder)  # fmt: skip
        assert isinstance(got, WarehouseError) or got == truth

    run()


@pytest.mark.parametrize("budget", BUDGETS)
def test_oxe_features_json(shared_samples, tmp_path, budget):
    """The 22 real features.json of the TFDS authors, mutated field by field and byte by byte."""
    from episode_warehouse.guards.json_input import load_json

    files = sorted((shared_samples / "oxe_features").rglob("features.json"))
    texts = [f.read_bytes() for f in files]

    @fuzz_settings(budget)
    @given(st.integers(0, len(files) - 1), field_mutations, byte_mutations, st.booleans())
    def run(which, fields, ops, by_bytes):
        name = str(files[which])
        if by_bytes:

            def parse():
                return parse_features(load_json(mutate_bytes(texts[which], ops), subject=name,
                                                fix="x"), name)  # fmt: skip
        else:

            def parse():
                return parse_features(mutate_fields(json.loads(texts[which]), fields), name)

        ends_well(parse, sandbox=tmp_path)

    run()


# --- WebDataset tars of pickled episodes (our fixture) ------------------------------------------


def _tar_build(src: Path, work: Path) -> dict:
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards

    decode_shards(list_shards(str(src), "toto").shards, work / "decoded")
    return _decoded_summary(work / "decoded")


@pytest.mark.parametrize("budget", BUDGETS)
def test_webdataset_tars(tmp_path, budget):
    from warehouse_fixtures.openx_writer import DatasetSpec, write_dataset

    src = tmp_path / "src"
    write_dataset(src, DatasetSpec("toto", image_size=16), [[3, 4]])
    shard = src / "toto" / "toto_00000.tar"
    raw = shard.read_bytes()
    truth = _tar_build(src, _folder(tmp_path))

    @fuzz_settings(budget)
    @given(byte_mutations)
    def run(ops):
        folder = _folder(tmp_path)
        (folder / "src" / "toto").mkdir(parents=True)
        (folder / "src" / "toto" / shard.name).write_bytes(mutate_bytes(raw, ops))
        got = ends_well(lambda: _tar_build(folder / "src", folder), sandbox=tmp_path, work=folder)
        assert isinstance(got, WarehouseError) or _schema(got) == _schema(truth)

    run()


# --- Dopamine checkpoints: np.save arrays in gzip ------------------------------------------------


def _checkpoint(folder: Path) -> tuple:
    meta = read_checkpoint_meta(folder, 0)
    frames = [_digest(rows) for _, rows in stream_rows(meta.observation_path, 64)]
    return (meta.add_count, _digest(meta.action, meta.reward, meta.terminal,
            meta.invalid_range), meta.capacity, tuple(frames))  # fmt: skip


@pytest.mark.parametrize("budget", BUDGETS)
def test_dopamine_checkpoints(tmp_path, budget):
    from warehouse_fixtures.atari_game import play_episode
    from warehouse_fixtures.dopamine_writer import write_run

    rng = np.random.default_rng(0)
    run_dir = tmp_path / "run"
    episodes = [play_episode(rng, int(n)) for n in (30, 40, 25, 50, 45)]
    write_run(run_dir, episodes, 120, final_log=False, compresslevel=1)
    truth = _checkpoint(run_dir)
    files = sorted(p.name for p in run_dir.iterdir() if p.name.endswith("_ckpt.0.gz"))

    @fuzz_settings(budget)
    @given(st.sampled_from(files), byte_mutations, st.booleans())
    def run(victim, ops, inside):
        folder = _folder(tmp_path)
        for name in files:
            shutil.copyfile(run_dir / name, folder / name)
        data = (run_dir / victim).read_bytes()
        if inside:  # past the gzip checksum: the .npy header and the arrays' own checks
            data = gzip.compress(mutate_bytes(gzip.decompress(data), ops), mtime=0)
        else:
            data = mutate_bytes(data, ops)
        (folder / victim).write_bytes(data)
        got = ends_well(lambda: _checkpoint(folder), sandbox=tmp_path)
        if not inside:
            assert isinstance(got, WarehouseError) or got == truth
        else:  # a value rewritten inside the stream may be another valid checkpoint
            assert isinstance(got, WarehouseError) or got[2] == truth[2]

    run()


# --- LeRobot: info.json fields and parquet bytes ------------------------------------------------


@pytest.fixture(scope="module")
def lerobot_dataset(tmp_path_factory) -> Path:
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    return write_lerobot_dataset(LeRobotSpec(lengths=(5, 7)), tmp_path_factory.mktemp("lerobot"))


def _lerobot_build(folder: Path, work: Path) -> dict:
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot

    decode_lerobot(open_lerobot_folder(folder), work / "decoded")
    return _decoded_summary(work / "decoded")


def _fuzz_dataset(dataset: Path, json_file: str, files: list, build, tmp_path, budget) -> None:
    """Copies of the dataset folder with its JSON metadata mutated at the field level, or one
    of ``files`` at the byte level; ``build`` ends in our error or in the unmutated schema."""
    truth = build(dataset, _folder(tmp_path))
    meta = json.loads((dataset / json_file).read_text())

    @fuzz_settings(budget)
    @given(field_mutations, st.sampled_from(files), byte_mutations, st.booleans())
    def run(fields, victim, ops, by_bytes):
        folder = _folder(tmp_path)
        copy = folder / "ds"
        shutil.copytree(dataset, copy)
        if by_bytes:
            (copy / victim).write_bytes(mutate_bytes((copy / victim).read_bytes(), ops))
        else:
            (copy / json_file).write_text(json.dumps(mutate_fields(meta, fields)))
        got = ends_well(lambda: build(copy, folder), sandbox=tmp_path, work=folder)
        assert isinstance(got, WarehouseError) or _schema(got) == _schema(truth)

    run()


@pytest.mark.parametrize("budget", BUDGETS)
def test_lerobot_info_and_parquet(lerobot_dataset, tmp_path, budget):
    parquets = sorted(p.relative_to(lerobot_dataset) for p in lerobot_dataset.rglob("*.parquet"))
    _fuzz_dataset(lerobot_dataset, "meta/info.json", parquets, _lerobot_build, tmp_path, budget)


@pytest.fixture(scope="module")
def minari_datasets(tmp_path_factory) -> dict[str, Path]:
    """Small Minari datasets written by Minari (``DataCollector``): HDF5 and arrow."""
    from warehouse_fixtures.minari_writer import ARM_ID, MinariSpec, write_minari_dataset

    base = tmp_path_factory.mktemp("minari")
    return {
        fmt: write_minari_dataset(
            MinariSpec(f"fz/arm/{fmt}-v0", env=ARM_ID, data_format=fmt, max_steps=6, episodes=2),
            base,
        )
        for fmt in ("hdf5", "arrow")
    }


def _minari_build(folder: Path, work: Path) -> dict:
    from episode_warehouse.sources.minari.decode import decode_minari

    decode_minari(folder, work / "decoded")
    return _decoded_summary(work / "decoded")


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("fmt", ["hdf5", "arrow"])
def test_minari_metadata_and_data_files(minari_datasets, tmp_path, budget, fmt):
    """metadata.json at the field level; main_data.hdf5 or an episode's arrow file at the byte
    level (neither checksums its bytes: a mutation may make another valid dataset)."""
    dataset = minari_datasets[fmt]
    files = sorted(
        p.relative_to(dataset)
        for p in (dataset / "data").rglob("*")
        if p.suffix in (".hdf5", ".arrow")
    )
    _fuzz_dataset(dataset, "data/metadata.json", files, _minari_build, tmp_path, budget)


# --- bucket records and hub answers -------------------------------------------------------------

_RECORD = {
    "version": "abc",
    "published": {
        "token": "abc-1700000000-0a1b2c3d",
        "prefix": ".v/abc-1700000000-0a1b2c3d",
        "files": {
            "episodes.parquet": {"size": 10, "generation": "17", "crc32c": "AAAAAA=="},
            "arrays/observation.npy": {"size": 99, "generation": "18", "crc32c": "AAAAAQ=="},
        },
    },
    "retired": [
        {
            "token": "old-1",
            "prefix": ".v/old-1",
            "files": {"episodes.parquet": {"size": 9, "generation": "3", "crc32c": "AAAAAg=="}},
            "replaced": 1700000000.0,
        }
    ],
}


@pytest.mark.parametrize("budget", BUDGETS)
def test_bucket_records(tmp_path, budget):
    """What check_record lets through is safe to join to a folder and to delete by."""

    @fuzz_settings(budget)
    @given(field_mutations)
    def run(fields):
        record = mutate_fields(_RECORD, fields)
        got = ends_well(lambda: check_record(record, "gs://b/wh/ted/x/meta.json"), sandbox=tmp_path)
        if isinstance(got, WarehouseError):
            assert isinstance(got, CorruptInputError)
            return
        for section in [got.get("published"), *got.get("retired", [])]:
            if section is None:
                continue
            assert name_problem(section["token"]) is None and "/" not in section["token"]
            names = set(section["files"])
            for name in names:
                assert name_problem(name) is None
                parts = name.split("/")
                assert not any("/".join(parts[:i]) in names for i in range(1, len(parts)))

    run()


@pytest.mark.parametrize("budget", BUDGETS)
def test_hub_answers(tmp_path, budget):
    """An answer's naming headers pass only as one plain path segment."""
    header = st.sampled_from(["ETag", "X-Linked-Etag", "X-Repo-Commit", "X-Xet-Hash"])
    value = st.text(
        st.characters(codec="latin-1", exclude_categories=("Cc",)), max_size=80
    ) | st.sampled_from(['"../../x"', 'W/"..\\x"', '"a/b"', '"' + "a" * 300 + '"', '".."'])

    @fuzz_settings(budget)
    @given(header, value)
    def run(name, text):
        request = httpx.Request("GET", "https://hub.example/x/resolve/main/f")
        response = httpx.Response(200, headers={name: text.encode("latin-1")}, request=request)
        got = ends_well(lambda: check_hub_answer(response), sandbox=tmp_path)
        if not isinstance(got, WarehouseError):
            token = text.removeprefix("W/").strip('"')
            assert "/" not in token and "\\" not in token and ".." not in token
            assert len(token.encode()) <= 255

    run()


# --- a standardized mapping (#40): the owner's JSON, checked against the TED's keys -------------


@pytest.mark.parametrize("budget", BUDGETS)
def test_standardized_mapping(tmp_path, budget):
    from episode_warehouse.standardized.mapping import MAPPINGS_FILE, mapping_for

    keys = {"action": {}, "observation/state": {}, "observation/image/front": {}}
    good = {
        "lerobot:lab/arm": {
            "action": "action",
            "action_encoding": "JOINT_POS",
            "state": "observation/state",
            "views": {"primary": "observation/image/front", "wrist": None},
        }
    }
    truth = mapping_for(_write_mapping(tmp_path, good, MAPPINGS_FILE), "lerobot", "lab/arm", keys)

    @fuzz_settings(budget)
    @given(field_mutations, byte_mutations, st.booleans())
    def run(fields, ops, by_bytes):
        folder = _folder(tmp_path)
        file = folder / MAPPINGS_FILE
        file.parent.mkdir(parents=True)
        text = json.dumps(good).encode()
        file.write_bytes(mutate_bytes(text, ops) if by_bytes else
                         json.dumps(mutate_fields(json.loads(text), fields)).encode())  # fmt: skip
        got = ends_well(lambda: mapping_for(folder, "lerobot", "lab/arm", keys),
                        sandbox=tmp_path, work=folder)  # fmt: skip
        if not isinstance(got, WarehouseError):
            assert set(got) == set(truth)
            assert set(got["views"]) == {"primary", "secondary", "wrist"}
            for key in [got["action"], got["state"], *got["views"].values()]:
                assert key is None or key in keys

    run()


def _write_mapping(base: Path, doc: dict, relative) -> Path:
    file = base / relative
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(doc))
    return base
