"""The ingestion pipeline end to end on real Redis Stack and real embeddings."""

from __future__ import annotations

import uuid

import pytest

from graph.configuration import Configuration
from loaders.pipeline import IngestReport, expand_paths, ingest, ingest_text
from models.embeddings import get_embeddings
from retrievers.parent_document import ParentDocumentRetriever
from stores.vector_store import RedisChunkStore
from tests.pdf_factory import make_pdf


@pytest.fixture(scope="module")
def store(redis_client):
    cfg = Configuration(index_name=f"test_ingest_{uuid.uuid4().hex[:8]}", parent_chunk_tokens=100, child_chunk_tokens=30, child_chunk_overlap=5)
    store = RedisChunkStore(redis_client, get_embeddings(cfg), cfg)
    yield store
    redis_client.ft(cfg.index_name).dropindex(delete_documents=True)


def test_folders_expand_recursively_sorted_without_hidden_files(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("z.txt", "a.md", "b/c.txt", ".hidden.txt", ".git/config.txt"):
        (tmp_path / name).write_text("x")
    assert [p.relative_to(tmp_path).as_posix() for p in expand_paths([tmp_path])] == ["a.md", "b/c.txt", "z.txt"]


def test_a_corrupt_file_is_reported_and_the_good_ones_are_stored(store, tmp_path, unique_user):
    good = make_pdf(tmp_path / "good.pdf", ["The harbour master is called Ines Varga.", "Boats pay a fee of 12 euros."])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(good.read_bytes()[:300])
    (tmp_path / "notes.txt").write_text("The harbour opens at six in the morning.")
    (tmp_path / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0")
    report = ingest([tmp_path, tmp_path / "missing.pdf"], store, store.cfg, user_id=unique_user)

    assert report.documents == 2 and len(report.doc_ids) == 2
    assert report.children >= 2 and report.parents >= 2 and report.seconds > 0
    errors = {e["source"].rsplit("/", 1)[-1]: e["error"] for e in report.errors}
    assert set(errors) == {"broken.pdf", "old.doc", "missing.pdf"}
    assert "truncated" in errors["broken.pdf"] and "legacy" in errors["old.doc"] and "no such file" in errors["missing.pdf"]
    assert sorted(d["source"] for d in store.list_documents(unique_user)) == ["good.pdf", "notes.txt"]
    top = ParentDocumentRetriever(store=store, user_id=unique_user).invoke("Who is the harbour master?")[0]
    assert top.metadata["source"] == "good.pdf" and top.metadata["page"] == 1


def test_reingest_is_idempotent_and_per_user(store, tmp_path, unique_user):
    path = make_pdf(tmp_path / "same.pdf", [" ".join(f"Line {i} of the tide table." for i in range(80))])
    other_user = unique_user + "-other"
    first = ingest([path], store, store.cfg, user_id=unique_user)
    theirs = ingest([path], store, store.cfg, user_id=other_user)
    again = ingest([path], store, store.cfg, user_id=unique_user, conversation_id="later")
    assert first.doc_ids == again.doc_ids == theirs.doc_ids
    assert first.children == again.children > 1
    (mine,) = store.list_documents(unique_user)
    assert mine["children"] == first.children and mine["conversation_id"] == "later"
    assert store.list_documents(other_user)[0]["children"] == first.children

    store.delete_document(unique_user, first.doc_ids[0])
    assert store.list_documents(unique_user) == []
    assert ParentDocumentRetriever(store=store, user_id=other_user).invoke("tide table"), "the other copy is untouched"


def test_ingest_text_and_the_report(store, unique_user):
    report = ingest_text("Keel answers from documents.", "note.md", store, store.cfg, user_id=unique_user)
    assert isinstance(report, IngestReport)
    assert report.to_dict().keys() == {"documents", "parents", "children", "seconds", "errors", "doc_ids"}
    assert (report.documents, report.parents, report.children, report.errors) == (1, 1, 1, [])
    empty = ingest_text("   ", "blank.md", store, store.cfg, user_id=unique_user)
    assert empty.documents == 0 and "no extractable text" in empty.errors[0]["error"]


def test_bad_ids_fail_before_any_work(store, tmp_path):
    with pytest.raises(ValueError, match="user_id"):
        ingest([tmp_path], store, store.cfg, user_id="")
    with pytest.raises(ValueError, match="conversation_id"):
        ingest([tmp_path], store, store.cfg, user_id="u", conversation_id="bad\n")


def test_progress_bar_goes_to_stderr(store, tmp_path, unique_user, capsys):
    (tmp_path / "a.txt").write_text("Progress bars are shown on stderr.")
    ingest([tmp_path], store, store.cfg, user_id=unique_user, progress=True)
    captured = capsys.readouterr()
    assert "ingest" in captured.err and captured.out == ""
