"""Datasets Minari wrote, once per test module (the module's ``SPECS``), and a fresh copy of
one per test to break."""

from __future__ import annotations

import shutil

import pytest

from warehouse_fixtures.minari_writer import MinariSpec, write_minari_dataset


@pytest.fixture(scope="module")
def originals(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("minari-originals")
    return {s.dataset_id: write_minari_dataset(s, base) for s in request.module.SPECS}


@pytest.fixture
def copy_of(originals, tmp_path):
    def copy(spec: MinariSpec):
        target = tmp_path / "datasets" / spec.dataset_id
        shutil.copytree(originals[spec.dataset_id], target)
        return target

    return copy
