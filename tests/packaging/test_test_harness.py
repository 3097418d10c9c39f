"""The test harness itself: what one test leaves behind must not break the next."""

import logging.config
import sys


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
