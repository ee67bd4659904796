"""A user's own retriever on the real parts (SmolLM2 on llama.cpp, all-MiniLM-L6-v2), as docs/usage.md
("Your own retriever") shows it: LangChain's InMemoryVectorStore as a retriever, whose documents carry no score. Keel
scores them with its embeddings, answers from the relevant one and cites it with a real similarity;
a question none of them is about gets the fallback."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

pytestmark = pytest.mark.real

DOCUMENTS = [
    Document("The Alder clinic opens at 7 am on weekdays and at 9 am on Saturdays.", metadata={"source": "clinic.txt"}),
    Document("The ferry to Varden leaves the north pier every morning; a return ticket costs 12 euros.",
             metadata={"source": "ferry.txt"}),
    Document("Tide tables for the harbour are posted weekly at the ferry office.", metadata={"source": "harbour.txt"}),
]


@pytest.fixture(scope="module")
def own_retriever_graph(keel_config, llm_endpoint):
    from keel.graph import build_graph
    from keel.models.embeddings import get_embeddings

    store = InMemoryVectorStore(get_embeddings(keel_config))
    store.add_documents(DOCUMENTS)
    return store, build_graph(retriever=store.as_retriever(search_kwargs={"k": 2}))


def ask(graph, question: str) -> dict:
    config = {"configurable": {"user_id": "alice", "thread_id": uuid.uuid4().hex}}
    return graph.invoke({"messages": [("human", question)]}, config)


def test_a_question_is_answered_from_the_users_own_retriever_with_a_real_score(own_retriever_graph):
    store, graph = own_retriever_graph
    question = "When does the Alder clinic open on weekdays?"
    result = ask(graph, question)
    assert result["status"] == "success", result
    assert "7" in result["answer"]
    [source] = [s for s in result["sources"] if s["source"] == "clinic.txt"]
    [(found, cosine)] = store.similarity_search_with_score(question, k=1)
    assert source["doc_id"] == found.id  # the Document's own id
    assert 0.0 < source["score"] <= 1.0
    assert source["score"] == pytest.approx(cosine, abs=1e-3)  # the store's cosine, the scale Keel's store uses
    assert result["confidence"] >= 0.6


def test_a_question_none_of_the_documents_is_about_gets_the_fallback(own_retriever_graph):
    _, graph = own_retriever_graph
    result = ask(graph, "What is the boiling point of mercury?")
    assert result["status"] == "insufficient_context", result
    assert result["route"] == "pretrained_corpus"
    assert result["answer"] == "I don't know based on the provided documents."
