"""A path the user names (``warehouse describe --out``, ``Selection.save``) is written or
refused, never replaced (#69 item 10): a rename over ``--out /dev/null`` replaced the machine's
``/dev/null`` with a regular file; a link or a pipe was replaced; a folder or a missing folder
gave a traceback."""

from __future__ import annotations

import json
import os

import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.loading import select_episodes
from tests.helpers import build_openx
from warehouse_cli.main import main
from warehouse_fixtures.openx_writer import DatasetSpec

pytestmark = pytest.mark.integration  # catalog queries


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("user-paths") / "wh"
    build_openx(root, DatasetSpec("cmu_stretch", cameras=("image",), image_size=16), [[4, 5]])
    return root


def _describe(capsys, root, out):
    rc = main(["describe", "openx", "cmu_stretch", "--root", str(root), "--out", str(out)])
    return rc, capsys.readouterr().err.strip().splitlines()


def test_describe_writes_a_new_or_regular_file(root, tmp_path, capsys):
    out = tmp_path / "doc.json"
    assert _describe(capsys, root, out)[0] == 0
    first = json.loads(out.read_text())
    assert first["recordSet"][0]["name"] == "episodes"
    out.write_text("old")  # a regular file is replaced by the new document, whole
    assert _describe(capsys, root, out)[0] == 0
    assert json.loads(out.read_text()) == first


def test_describe_refuses_what_is_not_a_regular_file(root, tmp_path, capsys):
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = {
        link: "a symbolic link",
        fifo: "a named pipe",
        folder: "a folder",
        tmp_path / "missing" / "doc.json": "its folder does not exist",
    }
    for path, said in cases.items():
        rc, err = _describe(capsys, root, path)
        assert rc == 2 and len(err) == 1, (path, err)
        assert str(path) in err[0] and said in err[0] and "Fix:" in err[0], err
    assert link.is_symlink() and target.read_text() == "keep me"
    assert fifo.is_fifo() and folder.is_dir() and not any(folder.iterdir())
    assert not (tmp_path / "missing").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "link.json", "pipe",
                                                          "target.txt"]  # fmt: skip


def test_selection_save_refuses_a_link(root, tmp_path):
    sel = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes", root=root
    )
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    link = tmp_path / "sel.json"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="a symbolic link"):
        sel.save(link)
    assert link.is_symlink() and target.read_text() == "{}"
    assert sel.save(tmp_path / "sub" / "sel.json").is_file()  # its folder is made
