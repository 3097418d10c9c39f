"""The guards themselves: each refuses its kind of hostile input with our error, naming it."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse.errors import ConfigError, CorruptInputError, LimitExceededError
from episode_warehouse.guards.json_input import load_json
from episode_warehouse.guards.names import checked_name, no_links_below, returned_path
from episode_warehouse.guards.numbers import check_finite, finite_number
from episode_warehouse.guards.shapes import checked_shape
from episode_warehouse.guards.text import checked_identifier, markdown_code, public_url


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a" * 300, "longer than 255 bytes"),
        ("/".join(["d" * 200] * 6), "longer than 1024 bytes"),
        ("é" * 128, "longer than 255 bytes"),  # 256 bytes in UTF-8
        ("../x", "'..' segment"),
    ],
)
def test_names_are_bounded_as_file_systems_are(name, problem):
    with pytest.raises(CorruptInputError, match=problem):
        checked_name(name, subject="gs://b/meta.json", what="record entry")
    assert checked_name("é" * 127, subject="s") == "é" * 127


def test_a_link_in_a_working_folder_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "cache").symlink_to(target)
    with pytest.raises(ConfigError, match="EPISODE_WAREHOUSE_CACHE: .*cache is a symbolic link"):
        no_links_below(tmp_path / "cache", setting="EPISODE_WAREHOUSE_CACHE")
    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    (real / "a" / "b").symlink_to(target)
    with pytest.raises(ConfigError, match="b is a symbolic link"):
        no_links_below(real, real / "a" / "b" / "c", setting="X")
    assert (
        no_links_below(real, real / "a" / "new" / "deeper", setting="X")
        == real / "a" / "new" / "deeper"
    )


def test_a_returned_path_outside_its_folder_is_refused(tmp_path):
    (tmp_path / "cache").mkdir()
    with pytest.raises(CorruptInputError, match="outside"):
        returned_path(
            tmp_path / "cache" / ".." / "victim", tmp_path / "cache", subject="hf", what="blob"
        )
    assert returned_path(tmp_path / "cache" / "x", tmp_path / "cache", subject="hf", what="blob")


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -np.inf, "1.0", True, None])
def test_finite_number_refuses_what_is_not_one(value):
    with pytest.raises(CorruptInputError, match="episode_return is"):
        finite_number(value, what="episode_return", subject="f", fix="x")
    assert finite_number(np.float32(2.5), what="r", subject="f", fix="x") == 2.5


def test_check_finite_names_the_first_bad_row_and_counts():
    values = np.zeros((100, 3), np.float32)
    values[17, 1] = np.nan
    values[60] = np.inf
    with pytest.raises(
        CorruptInputError, match=r"action is nan at step 17 \(4 values NaN or infinite\)"
    ):
        check_finite(values, key="action", subject="s", fix="x", locate=lambda r: f"step {r}")
    check_finite(values, key="action", subject="s", fix="x", rows=17)  # the rows before it


def test_shapes_are_multiplied_without_overflow_and_bounded():
    with pytest.raises(LimitExceededError, match=r"\(10000000000, 10000000000\) float32"):
        checked_shape(
            [10**10, 10**10], dtype="float32", subject="f", what="x", max_bytes=1 << 30, fix="f"
        )
    for bad in ([-1], [1.5], "12", [True], [1] * 40):
        with pytest.raises(CorruptInputError):
            checked_shape(bad, dtype="uint8", subject="f", what="x", max_bytes=10, fix="f")
    assert checked_shape(
        (2, np.int64(3)), dtype="uint8", subject="f", what="x", max_bytes=6, fix="f"
    ) == (2, 3)


def test_json_is_bounded_in_depth_and_size():
    with pytest.raises(LimitExceededError, match="nests deeper than 64"):
        load_json("[" * 100_000 + "]" * 100_000, subject="features.json", fix="x")
    with pytest.raises(LimitExceededError, match="nests deeper than 64"):
        load_json("[" * 65 + "]" * 65, subject="features.json", fix="x")
    with pytest.raises(LimitExceededError, match="bytes, over"):
        load_json(b" " * 100, subject="f", fix="x", max_bytes=10)
    with pytest.raises(CorruptInputError, match="not JSON"):
        load_json(b"{", subject="f", fix="x")
    assert load_json('{"a": [1, {"b": 2}]}', subject="f", fix="x") == {"a": [1, {"b": 2}]}


def test_identifiers_code_spans_and_urls():
    assert checked_identifier("so100_follower", what="robot_type", subject="s", fix="x")
    with pytest.raises(CorruptInputError):
        checked_identifier("a b", what="robot_type", subject="s", fix="x")
    assert markdown_code("a``b") == "```a``b```"
    assert public_url("https://huggingface.co/datasets/x") and public_url("gs://b/p")
    for local in ("/home/me/data", "file:///x", "https://user:pw@host/x", "relative/folder"):
        assert public_url(local) is None
