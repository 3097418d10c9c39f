"""Errors a retry policy can act on: transient vs terminal, from our classes and from the
exceptions of the libraries that talk to sources; and they survive a trip through a worker."""

import errno
import pickle

import psycopg2
import pytest
import requests
from google.api_core import exceptions as gexc

from episode_warehouse.errors import (
    ConcurrentWriteError,
    CorruptInputError,
    DiskFullError,
    FormatVersionError,
    NotMaterializedError,
    SourceMissingError,
    SourceUnreachableError,
    TerminalError,
    TransientError,
    WorkerError,
    classify,
    is_transient,
)


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (gexc.ServiceUnavailable("503"), True),
        (gexc.InternalServerError("500"), True),
        (gexc.TooManyRequests("429"), True),
        (gexc.NotFound("404"), False),
        (gexc.Forbidden("403"), False),
        (ConnectionResetError(errno.ECONNRESET, "reset"), True),
        (TimeoutError("slow"), True),
        (requests.ConnectionError("refused"), True),
        (requests.ReadTimeout("read timed out"), True),
        (OSError(errno.ENOENT, "no such file"), False),
        (ValueError("bad data"), False),
        (CorruptInputError("bad gzip"), False),
        (WorkerError("died"), True),
        (ConcurrentWriteError("busy"), True),
        (psycopg2.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg2.IntegrityError("duplicate key"), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_transient_or_not(exc, transient):
    assert is_transient(exc) is transient


def test_a_cause_chain_is_followed():
    try:
        try:
            raise ConnectionResetError(errno.ECONNRESET, "reset")
        except ConnectionResetError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_classify_names_the_source_and_keeps_the_class_apart():
    err = classify(gexc.NotFound("gone"), subject="gs://b/x")
    assert isinstance(err, SourceMissingError) and isinstance(err, TerminalError)
    assert "gs://b/x: not found (HTTP 404)" in str(err)
    err = classify(gexc.Forbidden("no"), subject="gs://b/x")
    assert isinstance(err, SourceMissingError) and "HTTP 403" in str(err)
    err = classify(gexc.ServiceUnavailable("busy"), subject="gs://b/x")
    assert isinstance(err, SourceUnreachableError) and isinstance(err, TransientError)


def test_every_concrete_error_is_transient_or_terminal():
    import episode_warehouse.errors as errors

    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.WarehouseError):
            if cls in (errors.WarehouseError, errors.SourceUnavailableError):
                continue
            assert issubclass(cls, TransientError) != issubclass(cls, TerminalError), cls


def test_format_version_is_its_own_error():
    assert not issubclass(FormatVersionError, NotMaterializedError)


def test_errors_pickle_with_subject_and_fix():
    err = DiskFullError("the disk is full", subject="/data/x", fix="free space")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DiskFullError and str(back) == str(err)
    assert (back.what, back.subject, back.fix) == ("the disk is full", "/data/x", "free space")
