""" "Save this filter" shows a ``warehouse export`` command line (#48): pasted into a POSIX shell
it must pass the filter and the root byte for byte. It was built as ``"<WHERE text>"``, so a
filter holding ``$(...)`` or a backtick ran when pasted, a ``$`` changed, an unquoted root
split. Here the shell itself says what arguments it passed, to a stand-in ``./warehouse``."""

from __future__ import annotations

import subprocess

import pytest

from episode_warehouse.viewer.listing import export_command, selection_sql

FILTERS = [
    "partition = 'a$(touch pwned)b'",
    "task LIKE '%`touch pwned`%'",
    "task = '$HOME \\\\ \" \\' !x' AND length > 2",
    "language_instruction = 'it''s \"quoted\"\n-- newline\ttab'",
    "",
]
ROOTS = ["/data/my warehouse", "gs://bucket/wh", "/tmp/$(touch pwned)/`x`"]


@pytest.mark.integration  # runs sh
@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("root", ROOTS)
def test_the_pasted_command_passes_the_filter_byte_for_byte(tmp_path, where, root):
    stand_in = tmp_path / "warehouse"
    stand_in.write_text("#!/bin/sh\nprintf '%s\\0' \"$@\"\n")
    stand_in.chmod(0o755)
    shown = export_command(where, root)
    out = subprocess.run(["sh", "-c", shown], cwd=tmp_path, capture_output=True, check=True)
    args = out.stdout.split(b"\0")[:-1]
    want = ["export", "NAME", selection_sql(where), "--root", root]
    assert [a.decode() for a in args] == want
    assert not (tmp_path / "pwned").exists()
