"""One check of an ``.npy`` header from outside (#69 item 12): every hostile header is a
``CorruptInputError`` naming the file, never a raw ``RuntimeError``, ``TypeError`` or
``TokenError``, and big-endian arrays are refused on every path."""

from __future__ import annotations

import io

import numpy as np
import pytest

from episode_warehouse.errors import CorruptInputError, LimitExceededError
from episode_warehouse.guards.npy import MAX_HEADER, parse_header, read_header


def header(shape, descr="<f4", fortran=False) -> bytes:
    """An .npy header as numpy writes one, for any shape literal (numpy's writer checks none)."""
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
    text += " " * (63 - (10 + len(text)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


def parse(head: bytes, data_bytes=None):
    return parse_header(head, subject="f.npy", fix="rebuild it", data_bytes=data_bytes)


def test_a_header_numpy_wrote_is_read_as_numpy_reads_it():
    for array in (np.zeros((3, 4), np.float32), np.arange(5, dtype=np.int64), np.zeros(())):
        out = io.BytesIO()
        np.save(out, array)
        data = out.getvalue()
        got = parse(data, data_bytes=len(data))
        assert got.shape == array.shape and got.dtype == array.dtype
        assert got.nbytes == array.nbytes and data[got.offset :] == array.tobytes()
        stream = io.BytesIO(data)
        assert read_header(stream, subject="f", fix="x", file_bytes=len(data)) == got
        assert stream.read() == array.tobytes()  # left at the first byte of data


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (header("(-1, 3)"), "-1 is not a size"),
        (header("(True, 3)"), "True is not a size"),
        (header("(2**63, 0)"), "does not parse"),  # numpy reads no expression: a literal only
        (header(f"({2**63}, 0)"), "past the"),
        (header(f"({2**40}, {2**40}, 0)"), "past the"),
        (header("(3,)")[:30], "ends after 30"),
        (header("(3,)")[:-20] + b"\x00" * 20, "does not parse"),
        (header("(3,)", descr=">f4"), "another byte order"),
        (header("(3,)", descr="|O"), "object dtype"),
        (header("(3,)", fortran=True), "Fortran order"),
        (header("(3,)", descr="<V0"), "items of no size"),
        (header("'abc'"), "shape is not valid"),
        (b"\x93NUMPY\x01\x00" + (MAX_HEADER + 1).to_bytes(2, "little"), "declares 10,001 bytes"),
        (b"\x93NUMPY\x07\x00\x10\x00", "not an .npy array"),
        (b"GIF89a", "not an .npy array"),
    ],
)
def test_hostile_headers_are_corrupt_input_naming_the_file(head, said):
    with pytest.raises(CorruptInputError, match=said) as err:
        parse(head, data_bytes=1 << 20)
    assert "f.npy" in str(err.value) and "rebuild it" in str(err.value)


def test_an_array_larger_than_the_file_is_refused_before_it_is_mapped():
    with pytest.raises(LimitExceededError, match=r"\(1000, 1000\) float32 \(4,000,000 bytes\)"):
        parse(header("(1000, 1000)"), data_bytes=4096)
