"""The test harness itself: what one test leaves behind must not break the next."""

import logging.config
import sys

import pytest


def test_a_dagster_run_under_capsys_leaves_the_capture_file_open(capsys):
    # every in-process Dagster run calls dictConfig, which closes every live handler; absl's
    # closes its stream unless that stream is the current or the real stderr (conftest)
    import absl.logging

    stream = absl.logging.get_absl_handler().python_handler.stream
    assert stream is sys.__stderr__
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    assert not stream.closed
    print("still writable", file=sys.stderr)
    assert capsys.readouterr().err == "still writable\n"


def test_workers_start_the_same_way_whatever_ran_before():
    # torchrl's import sets spawn where no start method is set (conftest sets fork first)
    import multiprocessing

    import torchrl  # noqa: F401

    assert multiprocessing.get_start_method() == "fork"


@pytest.mark.integration  # a pytest session of its own, with two workers
def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    # ./test runs --dist loadgroup: one cluster at a time, a module's costly fixture built
    # once. pytest 9.2 silently broke it with pytest-xdist 3.8 (pytest-xdist#1386: every
    # group's tests spread over the workers), hence pyproject's pin
    import re
    import subprocess

    body = "import pytest\n\npytestmark = pytest.mark.xdist_group('one')\n\n" + "".join(
        f"def test_{i}():\n    pass\n\n\n" for i in range(8)
    )
    (tmp_path / "test_grouped.py").write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this project's settings
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    ran = re.findall(r"\[(gw\d)\].*PASSED .*::test_\d@one", done.stdout)
    assert len(ran) == 8 and len(set(ran)) == 1, done.stdout[-2000:]
