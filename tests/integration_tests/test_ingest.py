"""The ingestion pipeline end to end on real Redis Stack and real embeddings: every document type,
base64 uploads (and the /ingest route), idempotent re-ingest, atomicity, and n-gram hints."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from langchain_core.runnables import RunnableLambda
from PIL import Image

from keel.core.configuration import Configuration
from keel.loaders import DocumentLoadError, loader_for
from keel.loaders.pipeline import IngestReport, ingest, ingest_base64, ingest_text
from keel.retrievers.parent_document import KeelParentRetriever
from keel.splitters import ParentChildSplitter
from keel.stores.chunk_store import EMBEDDING_TEXT_KEY, RedisChunkStore
from tests.document_factory import make_docx, make_image, make_pptx, make_rich_pdf
from tests.pdf_factory import make_pdf


pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def store(make_module_store):
    return make_module_store(parent_chunk_tokens=100, child_chunk_tokens=30, child_chunk_overlap=5)


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
    top = KeelParentRetriever(store=store, user_id=unique_user).invoke("Who is the harbour master?")[0]
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
    assert KeelParentRetriever(store=store, user_id=other_user).invoke("tide table"), "the other copy is untouched"


def test_ingest_text_and_the_report(store, unique_user):
    report = ingest_text("Keel answers from documents.", "note.md", store, store.cfg, user_id=unique_user)
    assert isinstance(report, IngestReport)
    assert report.to_dict().keys() == {"documents", "parents", "children", "seconds", "errors", "doc_ids", "warnings"}
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


# --- every document type, base64 uploads, atomicity, hints ----------------------------------------
def test_word_powerpoint_images_and_pdf_pictures_are_ingested_together(store, tmp_path, unique_user):
    make_docx(tmp_path / "rules.docx", heading="Harbour rules", paragraphs=("Boats moor at the eastern quay.",),
              image=(64, 64), image_alt="Quay map")
    make_pptx(tmp_path / "deck.pptx", [{"title": "Tide tables", "body": ["High tide at 06:10"], "notes": "Check twice"}])
    (tmp_path / "logo.png").write_bytes(make_image((48, 40)))
    make_rich_pdf(tmp_path / "fees.pdf", [[("text", 18, "Mooring Fees"), ("text", 10, "A dinghy pays 12 euros a night."),
                                           ("image", (80, 50), "RGB")]])
    report = ingest([tmp_path], store, store.cfg, user_id=unique_user)
    assert report.errors == [] and report.documents == 4
    stored = {doc["source"]: doc for doc in store.list_documents(unique_user)}
    assert set(stored) == {"rules.docx", "deck.pptx", "logo.png", "fees.pdf"}
    assert stored["deck.pptx"]["pages"] == 1 and stored["logo.png"]["children"] == 1

    retriever = KeelParentRetriever(store=store, user_id=unique_user)
    top = retriever.invoke("When is high tide?")[0]
    assert top.metadata["source"] == "deck.pptx" and "Speaker notes: Check twice" in top.page_content
    images = [p for p in retriever.invoke("image of the quay map") if p.metadata.get("multimodal_type") == "image"]
    assert images, "image chunks are searchable by their description"
    image = next(p for p in images if p.metadata["source"] == "rules.docx")
    assert image.page_content.startswith("[Image 1 on rules.docx: 64x64 pixels")
    assert Image.open(io.BytesIO(base64.b64decode(image.metadata["image_base64"]))).size == (64, 64)


def test_base64_upload_is_stored_like_the_file_and_reuploading_replaces_it(store, tmp_path, unique_user):
    path = make_pdf(tmp_path / "tide.pdf", ["High water at the harbour is at 06:10 on Mondays."])
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    first = ingest_base64("tide.pdf", encoded, store, store.cfg, user_id=unique_user, conversation_id="c1")
    again = ingest_base64("renamed.bin", encoded, store, store.cfg, user_id=unique_user, mime_type="application/pdf")
    from_file = ingest([path], store, store.cfg, user_id=unique_user)
    assert first.errors == again.errors == [] and first.doc_ids == again.doc_ids == from_file.doc_ids
    (doc,) = store.list_documents(unique_user)
    assert doc["children"] == first.children and doc["source"] == "tide.pdf"
    bad = ingest_base64("broken.pdf", "%%%not-base64%%%", store, store.cfg, user_id=unique_user)
    assert bad.documents == 0 and bad.errors == [{"source": "broken.pdf", "error": bad.errors[0]["error"]}]
    assert "invalid base64" in bad.errors[0]["error"]


def test_a_failure_in_the_middle_of_a_document_leaves_the_stored_copy_untouched(store, tmp_path, unique_user, monkeypatch):
    path = make_pdf(tmp_path / "log.pdf", [f"Entry {i}: the tide was high at {i} o'clock." for i in range(6)])
    good = ingest([path], store, store.cfg, user_id=unique_user)
    (before,) = store.list_documents(unique_user)

    import keel.loaders.prefetch as pipeline  # one file is read in the ingesting process, through here

    real_loader_for = pipeline.loader_for

    class BreaksOnPageThree:
        def __init__(self, inner):
            self.inner = inner

        def lazy_load(self):
            for number, page in enumerate(self.inner.lazy_load(), start=1):
                if number == 3:
                    raise DocumentLoadError("log.pdf", "page 3 cannot be read: damaged stream")
                yield page

    monkeypatch.setattr(pipeline, "loader_for", lambda *a, **k: BreaksOnPageThree(real_loader_for(*a, **k)))
    broken = ingest([path], store, store.cfg, user_id=unique_user)
    assert broken.documents == 0 and "page 3 cannot be read" in broken.errors[0]["error"]
    monkeypatch.setattr(pipeline, "loader_for", real_loader_for)

    class EmbeddingsFailOnSecondBatch:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def embed_documents(self, texts):
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("embedding server went away")
            return self.inner.embed_documents(texts)

        def embed_query(self, text):
            return self.inner.embed_query(text)

    changed = make_pdf(tmp_path / "log.pdf", [f"Entry {i}: the tide was low at {i} o'clock." for i in range(6)])
    flaky_cfg = Configuration(index_name=store.cfg.index_name, parent_chunk_tokens=100, child_chunk_tokens=30,
                              child_chunk_overlap=5, embedding_batch_size=2)
    flaky = RedisChunkStore(store.client, EmbeddingsFailOnSecondBatch(store.embeddings), flaky_cfg)
    flaky._dim = store.dim
    failed = ingest([changed], flaky, flaky_cfg, user_id=unique_user)
    assert failed.documents == 0 and "embedding server went away" in failed.errors[0]["error"]
    (after,) = store.list_documents(unique_user)
    assert after == before and after["doc_id"] == good.doc_ids[0], "the earlier copy is whole and unchanged"


def test_children_with_important_ngrams_are_embedded_with_their_hints(make_store, redis_client, tmp_path, unique_user):
    store = make_store(child_chunk_tokens=40, child_chunk_overlap=5)
    cfg = store.cfg
    text = " ".join(["The mandatory teams meet in the north hall every Monday."] * 4
                    + [f"Unrelated line {i} about parking." for i in range(12)])
    (tmp_path / "memo.txt").write_text(text)
    splitter = ParentChildSplitter.from_config(cfg)
    _, children = splitter.split_documents(loader_for(tmp_path / "memo.txt", user_id=unique_user).lazy_load())
    hinted = next(c for c in children if EMBEDDING_TEXT_KEY in c.metadata)
    report = ingest([tmp_path / "memo.txt"], store, cfg, user_id=unique_user)
    assert report.errors == []
    raw = redis_client.hgetall(f"{cfg.index_name}:child:{hinted.id}")
    assert raw[b"text"].decode() == hinted.page_content and b"<important>" not in raw[b"text"]
    stored = np.frombuffer(raw[b"embedding"], dtype=np.float32)
    with_hints = np.asarray(store.embeddings.embed_documents([hinted.metadata[EMBEDDING_TEXT_KEY]])[0])
    plain = np.asarray(store.embeddings.embed_documents([hinted.page_content])[0])
    assert float(stored @ with_hints) > 0.9999 > float(stored @ plain)


def test_the_ingest_route_takes_base64_uploads(store, tmp_path, unique_user):
    from fastapi.testclient import TestClient

    from keel.server.app import create_app
    from keel.server.ownership import thread_of
    from tests.serving_fakes import bearer, keys_and_owners

    api_keys, keys, owners = keys_and_owners(users=(unique_user,))
    app = create_app(graph=RunnableLambda(lambda x: x), cfg=store.cfg, store=store, api_keys=api_keys, owners=owners)
    client = TestClient(app, headers=bearer(keys[unique_user]))
    docx_b64 = base64.b64encode(make_docx(tmp_path / "a.docx", heading="Route test").read_bytes()).decode()
    ok = client.post("/ingest", json={"filename": "a.docx", "data_base64": docx_b64, "user_id": unique_user,
                                      "conversation_id": "conv-7"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["documents"] == 1 and ok.json().keys() == {"documents", "parents", "children", "seconds", "errors", "doc_ids", "warnings"}
    # kept under the caller's own conversation (keel/server/ownership.py); shown to them as theirs
    assert store.list_documents(unique_user)[0]["conversation_id"] == thread_of(unique_user, "conv-7")
    assert client.get("/documents").json()["documents"][0]["conversation_id"] == "conv-7"
    legacy = client.post("/ingest", json={"filename": "old.doc", "data_base64": base64.b64encode(b"\xd0\xcf\x11\xe0").decode(),
                                          "user_id": unique_user})
    assert legacy.status_code == 422 and "legacy Word" in legacy.json()["detail"]["errors"][0]["error"]
    other_user = client.post("/ingest", json={"filename": "a.docx", "data_base64": docx_b64, "user_id": "bad\nid"})
    assert other_user.status_code == 403 and "user_id" in other_user.json()["detail"]  # the key decides who


# --- a failure inside the Redis write itself leaves nothing half-written -------------------------
def _doc_keys(store, doc_id: str) -> dict[str, object]:
    """Every key of ``doc_id`` in the store's namespace with its value (scan, not the manifest)."""
    found = {}
    for raw in store.client.scan_iter(f"{store.index_name}:*{doc_id}*", count=1000):
        key = raw.decode()
        kind = store.client.type(key).decode()
        found[key] = store.client.hgetall(key) if kind == "hash" else store.client.get(key)
    for value in found.values():  # the manifest's timestamp changes per write; compare the rest
        if isinstance(value, dict):
            value.pop(b"ingested_at", None)
    return found


def _break_the_third_child_write(monkeypatch, store, how: str) -> None:
    """Make the 3rd child HSET of a MULTI fail: raised in Python while queueing, or queued as a
    command that Redis rejects inside EXEC (where the other commands still apply)."""
    import redis

    real_hset = redis.client.Pipeline.hset
    seen = {"children": 0}

    def hset(self, name, *args, **kwargs):
        if self.explicit_transaction and str(name).startswith(store.child_prefix):
            seen["children"] += 1
            if seen["children"] == 3:
                if how == "python":
                    raise RuntimeError("write interrupted half-way")
                return self.execute_command("HINCRBY", name, "broken", "not-a-number")
        return real_hset(self, name, *args, **kwargs)

    monkeypatch.setattr(redis.client.Pipeline, "hset", hset)


@pytest.mark.parametrize("how", ["python", "exec"])
def test_a_write_failing_half_way_leaves_no_orphan_keys(store, tmp_path, unique_user, monkeypatch, how):
    path = make_pdf(tmp_path / "half.pdf", [" ".join(f"Buoy {i} is painted {how} red." for i in range(60))])
    _break_the_third_child_write(monkeypatch, store, how)
    failed = ingest([path], store, store.cfg, user_id=unique_user)
    monkeypatch.undo()
    doc_id = next(loader_for(path).lazy_load()).metadata["doc_id"]
    assert failed.documents == 0 and len(failed.errors) == 1
    assert ("interrupted" if how == "python" else "undone") in failed.errors[0]["error"]
    assert _doc_keys(store, doc_id) == {}, "no child, parent or manifest of the failed document is left"
    assert store.list_documents(unique_user) == []
    assert ingest([path], store, store.cfg, user_id=unique_user).children > 3, "the same file ingests afterwards"


@pytest.mark.parametrize("how", ["python", "exec"])
def test_reingesting_identical_content_that_fails_mid_write_keeps_the_earlier_copy(
    store, tmp_path, unique_user, monkeypatch, how
):
    path = make_pdf(tmp_path / "keep.pdf", [" ".join(f"Pier {i} closes at {i} pm for {how}." for i in range(60))])
    good = ingest([path], store, store.cfg, user_id=unique_user)
    assert good.children > 3
    (doc_id,) = good.doc_ids
    before_keys, before_docs = _doc_keys(store, doc_id), store.list_documents(unique_user)

    _break_the_third_child_write(monkeypatch, store, how)
    again = ingest([path], store, store.cfg, user_id=unique_user)
    monkeypatch.undo()
    assert again.documents == 0 and len(again.errors) == 1
    after_keys = _doc_keys(store, doc_id)
    assert after_keys.keys() == before_keys.keys(), "no key lost, no orphan added"
    assert after_keys == before_keys, "every chunk, parent and the manifest as they were"
    assert store.list_documents(unique_user) == before_docs
    found = KeelParentRetriever(store=store, user_id=unique_user).invoke("When does the pier close?")
    assert found and {p.metadata["doc_id"] for p in found} == {doc_id}, "still searchable (index rebuilt on restore)"
    assert all("closes at" in p.page_content for p in found)


def test_the_ingest_calls_batch_size_is_the_one_used_for_embedding(store, tmp_path, unique_user):
    class CountingEmbeddings:
        def __init__(self, inner):
            self.inner, self.batches = inner, []

        def embed_documents(self, texts):
            self.batches.append(len(texts))
            return self.inner.embed_documents(texts)

        def embed_query(self, text):
            return self.inner.embed_query(text)

    counting = CountingEmbeddings(store.embeddings)
    store_cfg = Configuration(index_name=store.cfg.index_name, embedding_batch_size=32, parent_chunk_tokens=100,
                              child_chunk_tokens=30, child_chunk_overlap=5)
    counted = RedisChunkStore(store.client, counting, store_cfg)
    counted._dim = store.dim
    run_cfg = Configuration(index_name=store.cfg.index_name, embedding_batch_size=3, parent_chunk_tokens=100,
                            child_chunk_tokens=30, child_chunk_overlap=5)
    path = make_pdf(tmp_path / "batches.pdf", [" ".join(f"Crane {i} lifts {i} tonnes." for i in range(40))])
    report = ingest([path], counted, run_cfg, user_id=unique_user)
    assert report.children > 6 and sum(counting.batches) == report.children
    assert max(counting.batches) == 3, "the ingest call's cfg decides the batch size, not store.cfg"


def test_every_parent_and_child_carries_the_inheritable_metadata(store, tmp_path, unique_user):
    path = make_rich_pdf(tmp_path / "meta.pdf", [
        [("text", 18, "Harbour Fees"), ("text", 10, " ".join(f"Berth {i} costs {i} euros." for i in range(80)))],
        [("text", 10, "Second page text about the slipway."), ("image", (80, 50), "RGB")],
    ])
    report = ingest([path], store, store.cfg, user_id=unique_user, conversation_id="conv-meta")
    assert report.errors == [] and report.parents >= 3
    (doc_id,) = report.doc_ids
    keys = _doc_keys(store, doc_id)
    parents = [json.loads(v) for k, v in keys.items() if ":parent:" in k]
    children = [v for k, v in keys.items() if ":child:" in k]
    assert len(parents) == report.parents and len(children) == report.children
    assert {p["metadata"]["multimodal_type"] for p in parents} == {"text", "image"}
    for parent in parents:
        meta = parent["metadata"]
        assert meta["user_id"] == unique_user and meta["conversation_id"] == "conv-meta"
        assert meta["source"] == "meta.pdf" and meta["doc_id"] == doc_id and meta["total_pages"] == 2
        assert meta["page"] in (1, 2) and isinstance(meta["chunk_index"], int)
        assert meta["multimodal_type"] in ("text", "image")
    for child in children:
        fields = {k.decode(): v.decode() for k, v in child.items() if k != b"embedding"}
        assert fields["uuid"] == unique_user and fields["conversation_id"] == "conv-meta"
        assert fields["source"] == "meta.pdf" and fields["doc_id"] == doc_id and fields["total_pages"] == "2"
        assert fields["page"] in ("1", "2") and fields["chunk_index"].isdigit()
        assert fields["multimodal_type"] in ("text", "image")
    assert sorted(int(c[b"chunk_index"]) for c in children) == list(range(len(children)))
    assert sorted(p["metadata"]["chunk_index"] for p in parents) == list(range(len(parents)))
