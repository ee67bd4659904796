"""ParentDocumentRetriever on real Redis Stack and real all-MiniLM-L6-v2 embeddings."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.documents import Document

from graph.configuration import Configuration
from loaders.pipeline import ingest
from models.embeddings import get_embeddings
from retrievers.parent_document import ParentDocumentRetriever, rank_parents
from stores.vector_store import RedisChunkStore
from tests.pdf_factory import make_pdf

ISLAND = [
    "Varden Island Annual Report. This report describes the island's harbour, its lighthouse and its school.",
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
    "Its lamp can be seen from 22 nautical miles away. The lighthouse is painted red and white.",
    "The island school has 48 pupils and two teachers. The ferry to the mainland leaves every morning at 7 am.",
]
BAKERY = [
    "Recipes of the Harbour Bakery. Sourdough needs a starter fed with flour and water every day.",
    "Cinnamon buns are baked at 200 degrees for twelve minutes and glazed with sugar syrup.",
]


def test_rank_parents_sums_child_similarities():
    def child(parent):
        return Document(page_content="", metadata={"parent_id": parent})

    hits = [(child("p1"), 0.9), (child("p2"), 0.8), (child("p2"), 0.7), (child("p3"), 0.2)]
    assert rank_parents(hits) == [
        ("p2", pytest.approx(1.5), 0.8, 2),
        ("p1", 0.9, 0.9, 1),
        ("p3", 0.2, 0.2, 1),
    ]


@pytest.fixture(scope="module")
def store(redis_client):
    cfg = Configuration(index_name=f"test_retriever_{uuid.uuid4().hex[:8]}", parent_chunk_tokens=120, child_chunk_tokens=24, child_chunk_overlap=4)
    store = RedisChunkStore(redis_client, get_embeddings(cfg), cfg)
    yield store
    redis_client.ft(cfg.index_name).dropindex(delete_documents=True)


@pytest.fixture(scope="module")
def library(store, tmp_path_factory):
    """Two users; each has a file named report.pdf, with different content."""
    folder = tmp_path_factory.mktemp("retriever")
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    (folder / "alice").mkdir()
    (folder / "bob").mkdir()
    island = make_pdf(folder / "alice" / "report.pdf", ISLAND)
    bakery = make_pdf(folder / "alice" / "bakery.pdf", BAKERY)
    bob_report = make_pdf(folder / "bob" / "report.pdf", BAKERY)
    first = ingest([island, bakery], store, store.cfg, user_id=alice, conversation_id="conv-a")
    second = ingest([bob_report], store, store.cfg, user_id=bob)
    assert first.errors == [] and second.errors == []
    return {"alice": alice, "bob": bob, "island_id": first.doc_ids[0], "bakery_id": first.doc_ids[1]}


def test_the_page_that_answers_comes_first_with_its_scores(store, library):
    retriever = ParentDocumentRetriever(store=store, user_id=library["alice"])
    parents = retriever.invoke("Who built the lighthouse?")
    top = parents[0]
    assert "Mara Holt" in top.page_content
    assert top.metadata["page"] == 2 and top.metadata["source"] == "report.pdf"
    assert top.metadata["doc_id"] == library["island_id"]
    scores = [p.metadata["score"] for p in parents]
    assert scores == sorted(scores, reverse=True)
    for parent in parents:
        meta = parent.metadata
        assert meta["child_hits"] >= 1 and 0 < meta["max_similarity"] <= 1.0001
        assert meta["score"] >= meta["max_similarity"] - 1e-9
        assert meta["user_id"] == library["alice"]
    assert len({p.id for p in parents}) == len(parents)


def test_filters_by_document_and_conversation(store, library):
    only_bakery = ParentDocumentRetriever(store=store, user_id=library["alice"], doc_ids=[library["bakery_id"]])
    assert {p.metadata["doc_id"] for p in only_bakery.invoke("lighthouse")} == {library["bakery_id"]}
    wrong_conversation = ParentDocumentRetriever(store=store, user_id=library["alice"], conversation_id="conv-b")
    assert wrong_conversation.invoke("lighthouse") == []
    right_conversation = ParentDocumentRetriever(store=store, user_id=library["alice"], conversation_id="conv-a", k_children=2)
    hits = right_conversation.invoke("How long are cinnamon buns baked?")
    assert hits and sum(p.metadata["child_hits"] for p in hits) <= 2
    assert "Cinnamon" in hits[0].page_content


def test_a_user_never_gets_another_users_parents(store, library):
    bob = ParentDocumentRetriever(store=store, user_id=library["bob"])
    results = bob.invoke("Who built the Varden lighthouse in 1874?")
    assert results, "bob has his own report.pdf"
    assert all(p.metadata["user_id"] == library["bob"] for p in results)
    assert not any("Mara Holt" in p.page_content for p in results)
    stranger = ParentDocumentRetriever(store=store, user_id="nobody-" + uuid.uuid4().hex[:6])
    assert stranger.invoke("lighthouse") == []
