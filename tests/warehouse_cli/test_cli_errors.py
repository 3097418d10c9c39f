"""Bad input on the command line: one line on stderr naming the input and the fix, exit 2."""

import os

import pytest

from warehouse_cli.main import main
from warehouse_fixtures.gcs_emulator import free_port


def _run(capsys, *argv):
    rc = main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err


def test_unknown_partition_key(warehouse_env, capsys):
    rc, err = _run(capsys, "materialize", "atari", "Pongg/5")
    assert rc == 2 and len(err) == 1
    assert "'Pongg/5': not an Atari partition" in err[0] and "Fix:" in err[0]
    rc, err = _run(capsys, "materialize", "atari", "pong/5")
    assert rc == 2 and "did you mean 'Pong/5'" in err[0]
    rc, err = _run(capsys, "materialize", "openx", "../etc")
    assert rc == 2 and "not an OpenX dataset id" in err[0]
    # #48: a mistyped OXE name is one of the known ones, nearly
    rc, err = _run(capsys, "materialize", "openx", "tacoplay", "--through", "raw")
    assert rc == 2 and "did you mean 'taco_play' or 'jaco_play'?" in err[-1]


def test_unreachable_source_url(warehouse_env, capsys, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ATARI_TIMEOUT_S", "2")
    rc, err = _run(capsys, "materialize", "atari", "Pong/5", "--through", "raw")
    assert rc == 2 and len(err) == 1
    assert "gs://demo-atari-replay/dqn" in err[0] and "cannot list" in err[0]
    assert "STORAGE_EMULATOR_HOST" in err[0]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("gs://", "malformed source URL"),
        ("s3://bucket/dqn", "unsupported URL scheme 's3'"),
        ("/does/not/exist", "local mirror folder does not exist"),
    ],
)
def test_malformed_or_missing_url(warehouse_env, capsys, monkeypatch, url, expected):
    monkeypatch.setenv("ATARI_REPLAY_URL", url)
    rc, err = _run(capsys, "materialize", "atari", "Pong/5")
    assert rc == 2 and len(err) == 1 and expected in err[0]
    assert "Fix:" in err[0]


def test_sql_is_read_only_and_errors_are_one_line(warehouse_env, capsys):
    assert main(["materialize", "openx", "bridge"]) == 0
    capsys.readouterr()
    rc, err = _run(capsys, "sql", "DROP VIEW episodes")
    assert rc == 2 and "DROP statements are refused" in err[0]
    rc, err = _run(capsys, "sql", "COPY (SELECT 1) TO '/tmp/x.csv'")
    assert rc == 2 and "COPY statements are refused" in err[0]
    rc, err = _run(capsys, "sql", "SELECT nope FROM episodes")
    assert rc == 2 and len(err) == 1 and "nope" in err[0]
    assert main(["sql", "SELECT count(*) AS n FROM episodes"]) == 0
    out = capsys.readouterr().out
    assert "n" in out and "4" in out


def test_unusable_root(warehouse_env, capsys, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "file"))
    rc, err = _run(capsys, "materialize", "openx", "bridge")
    assert rc == 2 and len(err) == 1 and "is a file, not a folder" in err[0]
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "file" / "wh"))
    rc, err = _run(capsys, "materialize", "openx", "bridge")
    assert rc == 2 and len(err) == 1
    assert "cannot create the warehouse root" in err[0] and "Not a directory" in err[0]
    assert "Fix: point EPISODE_WAREHOUSE_ROOT at a folder you can write" in err[0]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("gs://", "malformed warehouse root URL"),
        ("s3://b/p", "s3:// warehouse root is not supported"),
    ],
)
def test_a_url_root_is_refused_not_made_a_folder(
    warehouse_env, capsys, monkeypatch, tmp_path, url, says
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", url)
    rc, err = _run(capsys, "materialize", "openx", "bridge")
    assert rc == 2 and len(err) == 1 and says in err[0] and url in err[0]
    assert not (tmp_path / (url.split(":")[0] + ":")).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_unwritable_root(warehouse_env, capsys, monkeypatch, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(locked / "wh"))
    rc, err = _run(capsys, "materialize", "openx", "bridge")
    assert rc == 2 and len(err) == 1 and "cannot create the warehouse root" in err[0]


def _peak_rss() -> int:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1]) * 1024


def test_sql_fetches_only_what_it_prints(warehouse_env, capsys):
    assert main(["materialize", "openx", "bridge", "--through", "catalog"]) == 0
    capsys.readouterr()
    before = _peak_rss()
    assert main(["sql", "--limit", "3", "SELECT * FROM range(10000000)"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.strip() for line in out[2:5]] == ["0", "1", "2"] and "more rows" in out[5]
    assert _peak_rss() - before < 200 << 20  # fetching 10M rows would take ~1 GB
    rc, err = _run(
        capsys,
        "sql",
        "--timeout",
        "1",
        "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range * b.range % 7 = 3",
    )
    assert rc == 2 and len(err) == 1 and "ran longer than 1 s and was stopped" in err[0]
    rc, err = _run(capsys, "sql", "SELECT * FROM read_text('/etc/passwd')")
    assert rc == 2 and len(err) == 1 and '"/etc/passwd"' in err[0]


def test_fixtures_into_an_impossible_folder(capsys):
    rc, err = _run(capsys, "fixtures", "/dev/null/x")
    assert rc == 2 and err == [
        "error: /dev/null/x: cannot create the fixtures folder (Not a directory) "
        "Fix: point the FOLDER argument at a folder you can write"
    ]
