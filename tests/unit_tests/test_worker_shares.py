"""Ingest workers and OCR workers share the CPUs the container grants: a folder read by two worker
processes on four CPUs gives each process's OCR two Tesseract processes, not four."""

from __future__ import annotations

import pytest

from keel.core.configuration import Configuration
from keel.loaders import prefetch


@pytest.fixture
def four_cpus(monkeypatch):
    monkeypatch.setattr(prefetch, "usable_cpus", lambda: 4)


def test_the_ingest_workers_default_to_the_usable_cpus(four_cpus):
    assert prefetch.worker_count(Configuration(), files=10) == 4
    assert prefetch.worker_count(Configuration(), files=3) == 3
    assert prefetch.worker_count(Configuration(), files=1) == 0  # one file: read in this process
    assert prefetch.worker_count(Configuration(ingest_workers=2), files=10) == 2


def test_each_worker_process_gets_its_share_of_the_cpus_for_ocr(four_cpus):
    assert prefetch._WorkerPool(2, Configuration(), {}, (None, "u", None)).cfg.ocr_workers == 2
    assert prefetch._WorkerPool(4, Configuration(), {}, (None, "u", None)).cfg.ocr_workers == 1
    assert prefetch._WorkerPool(8, Configuration(), {}, (None, "u", None)).cfg.ocr_workers == 1


def test_a_configured_number_of_ocr_workers_is_kept(four_cpus):
    assert prefetch._WorkerPool(2, Configuration(ocr_workers=3), {}, (None, "u", None)).cfg.ocr_workers == 3
