"""Files read and split ahead of the embedder in worker processes: the same documents stored as when
read in the ingesting process, the report in file order, failures per file (a crashed worker loses
only its own file), loaders registered here used there, workers' logs handled here."""

from __future__ import annotations

import logging
import os
from dataclasses import replace

import pytest

from keel.core.configuration import Configuration
from keel.loaders import registry
from keel.loaders.pipeline import ingest
from keel.loaders.prefetch import NOT_HANDED_BACK, WORKER_DIED, worker_count
from keel.loaders.registry import register_loader
from tests import ingest_worker_loaders as helpers
from tests.pdf_factory import make_pdf

LAMP = "The keeper of the {name} light lit its lamp at dusk and logged the ships that passed each night. "


class RecordingStore:
    """Keeps what each add_document call stored, by source."""

    def __init__(self):
        self.by_source: dict[str, tuple[list, list]] = {}

    def add_document(self, parents, children, batch_size=None):
        source = parents[0].metadata["source"]
        self.by_source[source] = ([(p.id, p.page_content) for p in parents],
                                  sorted((c.id, c.page_content, c.metadata["parent_id"]) for c in children))


@pytest.fixture
def own_loaders():
    """Loaders registered by a test are gone after it."""
    factories, registered = dict(registry._FACTORIES), dict(registry._REGISTERED)
    yield
    registry._FACTORIES.clear(), registry._FACTORIES.update(factories)
    registry._REGISTERED.clear(), registry._REGISTERED.update(registered)


def _folder(tmp_path, count: int = 6):
    for index in range(count):
        name = f"light-{index}"
        if index % 2:
            make_pdf(tmp_path / f"{name}.pdf", [LAMP.format(name=name) * (index + 1), f"Page two of {name}."])
        else:
            (tmp_path / f"{name}.txt").write_text(LAMP.format(name=name) * (20 * index + 1))
    (tmp_path / "empty.txt").write_text("   ")  # refused: no text
    return tmp_path


def _run(folder, workers: int, **extra):
    store = RecordingStore()
    cfg = replace(Configuration(), ingest_workers=workers, **extra)
    return ingest([folder], store, cfg, user_id="alice"), store


def test_workers_store_exactly_what_reading_here_stores_and_report_in_file_order(tmp_path):
    folder = _folder(tmp_path)
    alone, alone_store = _run(folder, 1)
    ahead, ahead_store = _run(folder, 2)
    assert alone.documents == ahead.documents == 6
    assert ahead_store.by_source == alone_store.by_source  # same parents, children, ids
    assert ahead.doc_ids == alone.doc_ids  # in the order the files were given
    assert ahead.errors == alone.errors and [e["source"].rsplit("/", 1)[-1] for e in ahead.errors] == ["empty.txt"]
    assert (ahead.parents, ahead.children) == (alone.parents, alone.children)


def test_a_small_read_ahead_budget_still_gives_every_file(tmp_path):
    report, store = _run(_folder(tmp_path), 2, ingest_read_ahead_bytes=1)
    assert report.documents == 6 and len(store.by_source) == 6


def test_worker_count_reads_one_file_or_one_worker_here():
    cfg = Configuration()
    assert worker_count(replace(cfg, ingest_workers=4), 1) == 0  # one file: no process to start
    assert worker_count(replace(cfg, ingest_workers=1), 10) == 0
    assert worker_count(replace(cfg, ingest_workers=4), 3) == 3  # never more workers than files
    assert worker_count(replace(cfg, ingest_workers=0), 50) == (os.cpu_count() if (os.cpu_count() or 1) > 1 else 0)


def test_a_registered_loader_is_used_by_the_workers_and_their_logs_arrive_here(tmp_path, own_loaders, caplog):
    register_loader([".memo"], helpers.logging_factory)
    for name in ("one", "two", "three"):
        (tmp_path / f"{name}.memo").write_text(LAMP.format(name=name))
    with caplog.at_level(logging.WARNING, logger=helpers.WORKER_LOG):
        report, store = _run(tmp_path, 2)
    assert report.documents == 3 and not report.errors
    readers = [r for r in caplog.records if r.name == helpers.WORKER_LOG]
    assert sorted(r.getMessage().split()[1] for r in readers) == ["one.memo", "three.memo", "two.memo"]
    assert all(r.process != os.getpid() for r in readers)  # read in the workers, logged here


def test_an_unexpected_loader_exception_fails_its_file_with_the_traceback_logged_here(tmp_path, own_loaders, caplog):
    register_loader([".bad"], helpers.broken_factory)
    (tmp_path / "a.txt").write_text(LAMP.format(name="a"))
    (tmp_path / "b.bad").write_text("whatever")
    (tmp_path / "c.txt").write_text(LAMP.format(name="c"))
    with caplog.at_level(logging.ERROR, logger="keel.loaders.pipeline"):
        report, _ = _run(tmp_path, 2)
    assert report.documents == 2
    assert report.errors == [{"source": str(tmp_path / "b.bad"), "error": "RuntimeError: parser bug on b.bad"}]
    assert any("Traceback" in r.getMessage() and "parser bug" in r.getMessage() for r in caplog.records)


def test_a_worker_that_dies_fails_only_its_own_file(tmp_path, own_loaders):
    register_loader([".crash"], helpers.killing_factory)
    for name in ("a", "b", "d", "e"):
        (tmp_path / f"{name}.txt").write_text(LAMP.format(name=name))
    (tmp_path / "c.crash").write_text("x" * 10_000)  # the largest: read first, beside the others
    report, store = _run(tmp_path, 2)
    assert report.documents == 4 and len(store.by_source) == 4
    assert report.errors == [{"source": str(tmp_path / "c.crash"), "error": WORKER_DIED}]


def test_documents_a_worker_cannot_hand_back_fail_only_their_own_file(tmp_path, own_loaders):
    register_loader([".odd"], helpers.unpicklable_factory)
    for name in ("a", "c"):
        (tmp_path / f"{name}.txt").write_text(LAMP.format(name=name))
    (tmp_path / "b.odd").write_text(LAMP.format(name="b"))
    report, store = _run(tmp_path, 2)
    assert report.documents == 2 and sorted(store.by_source) == ["a.txt", "c.txt"]
    assert len(report.errors) == 1 and report.errors[0]["source"] == str(tmp_path / "b.odd")
    assert report.errors[0]["error"].startswith(NOT_HANDED_BACK)


def test_a_loader_that_cannot_be_sent_to_workers_is_read_here(tmp_path, own_loaders):
    def local_factory(blob, **kwargs):  # a closure: not picklable
        return helpers.logging_factory(blob, **kwargs)

    register_loader([".local"], local_factory)
    for name in ("one", "two"):
        (tmp_path / f"{name}.local").write_text(LAMP.format(name=name))
    report, _ = _run(tmp_path, 2)
    assert report.documents == 2 and not report.errors
