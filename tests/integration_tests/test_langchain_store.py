"""KeelVectorStore: Keel's chunk store through LangChain's VectorStore interface, on the real Redis
Stack with real all-MiniLM-L6-v2 embeddings."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from keel.models.embeddings import get_embeddings
from keel.stores.langchain_store import KeelVectorStore

pytestmark = pytest.mark.real


@pytest.fixture
def chunk_store(make_store):
    return make_store()


DOCS = [
    Document(page_content="The ferry to the mainland leaves at 7 am.", metadata={"source": "island.pdf", "doc_id": "island", "page": 3}),
    Document(page_content="The lighthouse was built in 1874 by Mara Holt.", metadata={"source": "island.pdf", "doc_id": "island", "page": 2}),
    Document(page_content="Sourdough needs a starter fed every day.", metadata={"source": "{bakery} | v2.pdf", "doc_id": "bakery"}),
]


def test_it_is_a_vectorstore_that_adds_searches_with_scores_and_deletes(chunk_store):
    store = KeelVectorStore(chunk_store, user_id="lc-alice")
    assert isinstance(store, VectorStore)
    ids = store.add_documents(DOCS)
    assert len(ids) == 3 and len(set(ids)) == 3
    hits = store.similarity_search_with_score("Who built the lighthouse?", k=3)
    assert hits[0][0].page_content == DOCS[1].page_content
    assert hits[0][0].metadata["page"] == 2 and hits[0][0].metadata["doc_id"] == "island"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1.0001
    assert [d.page_content for d in store.similarity_search("bread starter", k=1)] == [DOCS[2].page_content]
    # filters: by document, by file name (with braces and a pipe in it), never wider
    assert {d.metadata["doc_id"] for d in store.similarity_search("lighthouse", k=5, filter={"doc_id": "bakery"})} == {"bakery"}
    assert {d.metadata["source"] for d in store.similarity_search("x", k=5, filter={"source": "{bakery} | v2.pdf"})} == {"{bakery} | v2.pdf"}
    assert store.similarity_search("x", k=5, filter={"source": "{bakery}"}) == []
    assert store.similarity_search("x", k=5, filter={"source": "island.pdf|{bakery} | v2.pdf"}) == []
    with pytest.raises(ValueError, match="unknown filter"):
        store.similarity_search("x", filter={"uuid": "someone-else"})
    # the retriever LangChain builds from it works too
    assert store.as_retriever(search_kwargs={"k": 1}).invoke("When does the ferry leave?")[0].metadata["page"] == 3
    # delete by doc id (keyword) removes the whole document
    assert store.delete(doc_ids=["island"]) is True
    assert {d.metadata["doc_id"] for d in store.similarity_search("lighthouse ferry", k=5)} == {"bakery"}
    assert store.delete(doc_ids=["island"]) is False
    with pytest.raises(ValueError, match="never deletes everything"):
        store.delete()


def test_delete_takes_the_ids_add_documents_returned(chunk_store, redis_client):
    store = KeelVectorStore(chunk_store, user_id="lc-dan")
    ids = store.add_documents(DOCS)
    ferry, lighthouse, bread = ids
    assert store.delete([lighthouse]) is True  # one chunk of the two-chunk "island" document
    assert [d.id for d in store.get_by_ids(ids)] == [ferry, bread]
    assert {d.page_content for d in store.similarity_search("lighthouse ferry bread", k=5)} == {
        DOCS[0].page_content, DOCS[2].page_content}
    [island] = [doc for doc in chunk_store.list_documents("lc-dan") if doc["doc_id"] == "island"]
    assert (island["children"], island["parents"]) == (1, 1)
    extra = Document(page_content="Tide tables are printed every spring.", metadata={"doc_id": "tides"})
    assert store.delete(store.add_documents([extra])) is True  # the round trip the interface promises
    assert store.similarity_search("tide tables", k=5, filter={"doc_id": "tides"}) == []
    assert store.delete([ferry, bread]) is True
    assert store.similarity_search("lighthouse ferry bread", k=5) == []
    assert chunk_store.list_documents("lc-dan") == []
    user_key = chunk_store._user_key("lc-dan")
    assert [k for k in redis_client.scan_iter(match=f"{chunk_store.index_name}:*") if user_key.encode() in k] == []
    assert store.delete([ferry]) is False  # already gone
    with pytest.raises(ValueError, match="not both"):
        store.delete([ferry], doc_ids=["island"])


def test_get_by_ids_returns_only_this_users_chunks_in_order(chunk_store):
    alice = KeelVectorStore(chunk_store, user_id="lc-alice")
    bob = KeelVectorStore(chunk_store, user_id="lc-bob")
    ids = alice.add_documents(DOCS)
    got = alice.get_by_ids([ids[2], "missing", ids[0]])
    assert [d.id for d in got] == [ids[2], ids[0]]
    assert [d.page_content for d in got] == [DOCS[2].page_content, DOCS[0].page_content]
    assert got[1].metadata["doc_id"] == "island" and got[1].metadata["page"] == 3 and got[1].metadata["user_id"] == "lc-alice"
    assert bob.get_by_ids(ids) == []
    assert bob.delete(ids) is False and len(alice.get_by_ids(ids)) == 3  # bob cannot delete alice's chunks


def test_each_instance_sees_only_its_users_documents(chunk_store):
    alice = KeelVectorStore(chunk_store, user_id="lc-alice")
    bob = KeelVectorStore(chunk_store, user_id="lc-bob")
    alice.add_documents(DOCS)
    bob.add_texts(["Bob's island notes: the ferry is cancelled."], [{"source": "island.pdf", "doc_id": "island"}])
    assert {d.metadata["user_id"] for d in bob.similarity_search("ferry lighthouse", k=10)} == {"lc-bob"}
    assert len(bob.similarity_search("ferry", k=10, filter={"doc_id": ["island", "bakery"]})) == 1
    bob.delete(doc_ids=["island"])
    assert len(alice.similarity_search("lighthouse ferry", k=10, filter={"doc_id": "island"})) == 2
    with pytest.raises(ValueError, match="belongs to user"):
        bob.add_documents([Document(page_content="x", metadata={"user_id": "lc-alice"})])


def test_from_texts_and_replacing_a_document(chunk_store, redis_client):
    store = KeelVectorStore.from_texts(
        ["Alpha text about tides."], get_embeddings(), [{"doc_id": "tides"}],
        user_id="lc-carol", client=redis_client, cfg=chunk_store.cfg,
    )
    assert store.similarity_search("tides", k=1)[0].page_content == "Alpha text about tides."
    store.add_texts(["Replacement text about moons."], [{"doc_id": "tides"}])
    assert [d.page_content for d in store.similarity_search("tides", k=5)] == ["Replacement text about moons."]
    with pytest.raises(ValueError, match="no text"):
        store.add_texts(["   "])


def test_ids_cannot_reach_into_another_users_namespace(chunk_store):
    alice = KeelVectorStore(chunk_store, user_id="lc-alice")
    bob = KeelVectorStore(chunk_store, user_id="lc-bob")
    [alice_id] = alice.add_texts(["Alice's private note about the harbour."], [{"doc_id": "notes"}], ids=["note-1"])
    [bob_id] = bob.add_texts(["Bob's note."], [{"doc_id": "notes"}], ids=[alice_id])  # bob tries alice's id
    assert bob_id != alice_id
    assert alice.similarity_search("harbour", k=5)[0].page_content == "Alice's private note about the harbour."
    with pytest.raises(ValueError, match="user key"):
        chunk_store.add_document(
            [Document(id="p1", page_content="x", metadata={"user_id": "lc-bob", "doc_id": "d"})],
            [Document(id="c1", page_content="x", metadata={"user_id": "lc-bob", "doc_id": "d", "parent_id": "p1"})],
        )
