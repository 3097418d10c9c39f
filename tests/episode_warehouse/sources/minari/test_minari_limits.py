"""Minari files that declare more than they hold (#48): the input limits (steps, expansion,
text) are checked from what the files declare before a value is read, so a few KB of file
never allocates GBs. Each dataset starts as one Minari wrote; one declaration is then inflated.
Peak allocations are measured with tracemalloc (numpy reports its buffers there)."""

from __future__ import annotations

import json
import tracemalloc

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.incremental import build_if_changed
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources.minari.decode import decode_minari
from episode_warehouse.sources.minari.metadata import read_info
from warehouse_fixtures.minari_writer import MIXED_ID, MinariSpec

CARTPOLE = MinariSpec("fx/cartpole/big-v0", max_steps=12, episodes=3)
PARQUET = MinariSpec("fx/cartpole/bigpq-v0", max_steps=12, episodes=2, data_format="parquet")
MIXED = MinariSpec("fx/mixed/big-v0", env=MIXED_ID, max_steps=12, episodes=2)
MB = 1 << 20


SPECS = (CARTPOLE, PARQUET, MIXED)  # written once (conftest: originals, copy_of)


def _refused(dataset, tmp_path, error, match, limits=None, peak_mb=32) -> None:
    """Decoding is refused with ``error`` matching ``match``, nothing is published, and the
    refusal allocated at most ``peak_mb``."""
    layout = WarehouseLayout.local(tmp_path / "wh")
    target = layout.decoded_dir("minari", "fx/any/x-v0")
    tracemalloc.start()
    try:
        with pytest.raises(error, match=match):
            build_if_changed(layout.root, target, {"t": 1},
                             lambda tmp: decode_minari(dataset, tmp, limits=limits))  # fmt: skip
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < peak_mb * MB, f"peak {peak / MB:.0f} MB"
    assert not (target / "meta.json").exists()


def _metadata(dataset, **changes):
    path = dataset / "data" / "metadata.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


def test_an_unwritten_chunked_dataset_of_250m_values(copy_of, tmp_path):
    """53 KB of file peaked at 2.9 GB: h5py allocated the declared rewards to read them."""
    dataset = copy_of(CARTPOLE)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        del f["episode_1/rewards"]
        f.create_dataset("episode_1/rewards", shape=(250_000_000,), dtype="f8", chunks=(4096,))
    assert (dataset / "data" / "main_data.hdf5").stat().st_size < 1 * MB
    _refused(dataset, tmp_path, LimitExceededError,
             "episode_1/rewards declares 250,000,000 rows, over the limit")  # fmt: skip


def test_a_dataset_declaring_more_bytes_than_the_file_may_expand_to(copy_of, tmp_path):
    dataset = copy_of(CARTPOLE)
    with h5py.File(dataset / "data" / "main_data.hdf5", "a") as f:
        n = f["episode_0/observations"].shape[0]
        del f["episode_0/observations"]
        f.create_dataset("episode_0/observations", shape=(n, 4, 1_000_000), dtype="f4",
                         chunks=(1, 4, 4096))  # fmt: skip
    _refused(dataset, tmp_path, LimitExceededError, "episode_0/observations declares .* bytes",
             limits=InputLimits(expansion_slack_bytes=MB))  # fmt: skip


def test_a_parquet_file_whose_values_expand_past_the_budget(copy_of, tmp_path):
    """A small Parquet file (run-length encoded zeros) declaring 16 MB of values: refused
    from its footer, before pyarrow decodes it."""
    dataset = copy_of(PARQUET)
    (file,) = [p for p in (dataset / "data" / "0").iterdir() if p.suffix == ".parquet"]
    pq.write_table(pa.table({"rewards": np.zeros(2_000_000)}), file, compression="zstd")
    assert file.stat().st_size < 256 << 10
    limits = InputLimits(max_steps=10**7, max_expansion=5, expansion_slack_bytes=MB)
    _refused(dataset, tmp_path, LimitExceededError, "declares 16,000,000 bytes of values",
             limits=limits, peak_mb=8)  # fmt: skip


@pytest.mark.parametrize("spec", [CARTPOLE, PARQUET], ids=["hdf5", "parquet"])
def test_an_episode_over_max_steps_is_refused_before_it_is_read(copy_of, tmp_path, spec):
    """A 300,000-step episode passed max_steps (100,000): the limit was not applied."""
    dataset = copy_of(spec)
    _refused(dataset, tmp_path, LimitExceededError, "over the limit of 5 steps",
             limits=InputLimits(max_steps=5))  # fmt: skip


def test_a_huge_uint8_box_space_allocates_no_bounds(copy_of):
    """A 400-byte space declaring a (8000, 8000) uint8 Box with scalar bounds broadcast them
    to float64 (1 GB for low and high)."""
    dataset = copy_of(CARTPOLE)
    box = {"type": "Box", "dtype": "uint8", "shape": [8000, 8000], "low": 0, "high": 255}
    _metadata(dataset, observation_space=json.dumps(box))
    tracemalloc.start()
    try:
        info = read_info(dataset / "data")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MB, f"peak {peak / MB:.0f} MB"
    assert info.observation[0].image and info.observation[0].bounded


@pytest.mark.parametrize("spec", [CARTPOLE, PARQUET], ids=["hdf5", "parquet"])
def test_ten_million_declared_episodes_are_refused_by_count(copy_of, tmp_path, spec):
    """total_episodes 10,000,000 built 10M names (2.5 GB) before its refusal."""
    dataset = copy_of(spec)
    _metadata(dataset, total_episodes=10_000_000)
    _refused(dataset, tmp_path, CorruptInputError, "10,000,000", peak_mb=16)


@pytest.mark.parametrize(("limits", "match"), [
    (InputLimits(max_texts=2), "holds more than 2 distinct texts"),
    (InputLimits(max_text_bytes=3), "is a text of 4 bytes, over the limit of 3"),
])  # fmt: skip
def test_text_leaves_are_bounded(copy_of, tmp_path, limits, match):
    """Text leaves had no size bound, and every distinct text lands in meta.json, read whole
    on every open. The mixed env's missions: "left", "right", "wait"."""
    _refused(copy_of(MIXED), tmp_path, LimitExceededError, match, limits=limits)
