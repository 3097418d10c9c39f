"""``warehouse view`` and ``warehouse ui --viewer-port`` refuse a port in use with one line
naming the port and the fix, before anything starts."""

from __future__ import annotations

import socket

import pytest

from warehouse_cli.main import main


@pytest.mark.parametrize("command", [["view"], ["ui", "--port", "1", "--viewer-port"]])
def test_a_port_in_use_is_one_line_with_the_fix(tmp_path, capsys, command):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        args = [*command, port] if command[0] == "ui" else [*command, "--port", port]
        if command[0] == "view":
            args += ["--root", str(tmp_path)]
        assert main(args) == 2
    err = capsys.readouterr().err
    assert f"port {port} is in use" in err and "--port" in err and err.count("\n") == 1


def test_a_root_that_does_not_exist_is_refused_not_ready(tmp_path, capsys):
    """#48: `warehouse view --root /nonexistent` said "ready" over nothing."""
    assert main(["view", "--root", str(tmp_path / "nonexistent")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "--root" in err and "ready" not in err
