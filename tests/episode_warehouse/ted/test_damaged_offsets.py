"""Damaged frame offsets are a corrupt-input error when a camera is opened, and a finding of the
TED check (#57 item 10): before, ``offsets[4] = -1``, ``offsets[2] = 10**12`` or an emptied
interior frame read as frames of zeros and the check passed. The same offsets in a bucket are
refused before any frame is fetched (they fetched the whole object six times and said the
source was unreachable); that case is in tests/bucket/test_hostile_names.py."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.rows import offsets_file
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.files import read_meta
from episode_warehouse.ted.open import open_ted_folder
from episode_warehouse.ted.validate import check_ted
from tests.helpers import build_openx_stages
from warehouse_fixtures.droid import write_droid

pytestmark = pytest.mark.integration
CAMERA = "observation/wrist_image_left"


def _minus_one(o):
    o[4] = -1


def _far(o):
    o[2] = 10**12


def _emptied(o):
    o[3] = o[2]  # frame 2 empty, frame 3 holds both


def _shifted(o):
    o[:] = o + 5  # does not start at 0 nor end at the size


DAMAGE = {"minus-one": _minus_one, "past-the-end": _far, "emptied": _emptied, "shifted": _shifted}


@pytest.fixture(scope="module")
def ted_folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("offsets")
    write_droid(tmp / "src", shards=1, per_shard=2)
    layout = WarehouseLayout.local(tmp / "wh")
    build_openx_stages(layout, tmp / "src", "droid")
    return layout.ted_dir("openx", "droid")


def damaged_copy(folder, target, change):
    """A copy of the TED (its own files: the published ones are hard links of the decoded
    stage's) with the camera's offsets changed by ``change``."""
    shutil.copytree(folder, target)
    name = offsets_file(read_meta(target).keys[CAMERA]["file"])
    offsets = np.load(target / name)
    change(offsets)
    (target / name).unlink()
    np.save(target / name, offsets)
    return target


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_offsets_are_refused_at_open_and_found_by_the_check(ted_folder, tmp_path, damage):
    assert check_ted(ted_folder).problems == []
    copy = damaged_copy(ted_folder, tmp_path / "ted", DAMAGE[damage])
    with pytest.raises(CorruptInputError, match="frame offsets are damaged"):
        open_ted_folder(copy)[("observation", "wrist_image_left")][0]
    problems = check_ted(copy).problems
    assert any("frame offsets are damaged" in p for p in problems), problems


def test_a_frame_of_another_kind_is_a_finding_of_the_check(ted_folder, tmp_path):
    """Bytes that are no camera's (a GIF spliced into the frame file): the check reads every
    frame's signature, where it decoded only the first and the last."""
    copy = tmp_path / "ted"
    shutil.copytree(ted_folder, copy)
    file = read_meta(copy).keys[CAMERA]["file"]
    data = bytearray((copy / file).read_bytes())
    start = int(np.load(copy / offsets_file(file))[5])
    data[start : start + 6] = b"GIF89a"
    (copy / file).unlink()
    (copy / file).write_bytes(bytes(data))
    problems = check_ted(copy).problems
    assert any("not JPEG, PNG or Zstandard" in p and "row 5" in p for p in problems), problems
