"""A user's own BaseRetriever works out of the box: documents without Keel's metadata (no score,
no doc_id, no source) get a similarity from the configured embeddings, a document id and a
readable source, so a relevant document is answered from and an irrelevant one is not.
With fakes (deterministic); the real parts are in integration_tests/test_custom_retriever_real.py."""

from __future__ import annotations

import re

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever

from keel.graph import build_graph
from keel.retrievers.fanout import QUERY_VECTORS, search_parallel
from keel.retrievers.passages import passages_from_documents
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

LIGHTHOUSE = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
TIDES = "Tide tables for the harbour are posted weekly at the ferry office."
FALLBACK = "I don't know based on the provided documents."
QUESTION = "Who built the Varden lighthouse?"


class KeywordRetriever(BaseRetriever):
    """What a user writes in ten lines: documents sharing a word with the query, most shared first,
    as plain Documents (no score, no Keel keys)."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = set(re.findall(r"\w+", query.lower()))
        shared = [(len(words & set(re.findall(r"\w+", d.page_content.lower()))), d) for d in self.documents]
        return [d for count, d in sorted(shared, key=lambda row: -row[0]) if count]


class CountingEmbeddings(BagOfWordsEmbeddings):
    """Counts embedding calls: texts per ``embed_documents`` call, and ``embed_query`` calls."""

    def __init__(self) -> None:
        self.document_calls: list[int] = []
        self.query_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(len(texts))
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        return super().embed_query(text)


def make_graph(responses, retriever, embeddings=None):
    return build_graph(chat_model=FakeListChatModel(responses=responses), embeddings=embeddings or BagOfWordsEmbeddings(),
                       retriever=retriever, tokenizer=WordTokenizer())


def ask(graph, question, **configurable):
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": configurable})


# --- through the graph --------------------------------------------------------------------------------


def test_a_plain_retriever_without_scores_answers_with_a_real_score_and_a_document_id():
    retriever = KeywordRetriever(documents=[
        Document(page_content=LIGHTHOUSE, metadata={"source": "varden-guide.txt"}),
        Document(page_content="The Varden school has 48 pupils.", metadata={"source": "school.txt"}),
    ])
    graph = make_graph(["<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"], retriever)
    result = ask(graph, QUESTION)
    assert result["status"] == "success", result["reasons"]
    assert "Mara Holt" in result["answer"]
    assert result["confidence"] >= 0.6
    [source] = result["sources"]
    assert source["source"] == "varden-guide.txt"
    assert source["doc_id"] == "varden-guide.txt"
    assert 0.0 < source["score"] <= 1.0


def test_an_irrelevant_document_scores_low_and_the_answer_abstains_without_a_model_call():
    retriever = StaticRetriever(documents=[Document(page_content=TIDES, metadata={"source": "harbour.txt"})])
    graph = make_graph(["<answer>Mara Holt built it [Source 1].</answer>"], retriever)
    result = ask(graph, QUESTION)
    assert result["answer"] == FALLBACK
    assert result["status"] == "insufficient_context"  # nothing relevant: the same as with Keel's own store
    assert result["route"] == "pretrained_corpus"
    assert result["reasons"] == ["no_relevant_context"]
    assert result["sources"] == [] and result["confidence"] == 0.0


def test_of_a_relevant_and_an_irrelevant_document_only_the_relevant_one_is_shown_and_cited():
    retriever = StaticRetriever(documents=[
        Document(page_content=TIDES, metadata={"source": "harbour.txt"}),
        Document(page_content=LIGHTHOUSE, id="lighthouse-1"),
    ])
    graph = make_graph(["<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"], retriever)
    result = ask(graph, QUESTION)
    assert result["status"] == "success", result["reasons"]
    # the tide table came first from the retriever, yet is not the passage the answer cites as [Source 1]
    assert [(s["doc_id"], s["source"]) for s in result["sources"]] == [("lighthouse-1", "lighthouse-1")]
    assert "harbour.txt" not in result["sources_markdown"]


# --- scoring and naming, one step at a time -----------------------------------------------------------


def test_unscored_documents_of_every_search_are_embedded_in_one_batch_and_the_query_vector_is_reused():
    QUERY_VECTORS.clear()
    embeddings = CountingEmbeddings()
    first = StaticRetriever(documents=[Document(page_content=LIGHTHOUSE), Document(page_content=TIDES)])
    second = StaticRetriever(documents=[Document(page_content="Mara Holt also built the pier.")])
    tasks = [(first, QUESTION), (second, "Who is Mara Holt?")]
    results = search_parallel(tasks, embeddings=embeddings)
    assert embeddings.document_calls == [3]  # the three texts at once
    assert embeddings.query_calls == 2
    lighthouse, tides = results[0]
    assert 0.0 < tides.metadata["score"] < 0.35 < lighthouse.metadata["score"] <= 1.0
    assert 0.0 < results[1][0].metadata["score"] <= 1.0
    assert first.documents[0].metadata == {}, "the retriever's own Document objects are left alone"

    again = search_parallel(tasks, embeddings=embeddings)  # the next node of the turn asks again
    assert embeddings.query_calls == 2 and embeddings.document_calls == [3]
    assert [d.metadata["score"] for d in again[0]] == [d.metadata["score"] for d in results[0]]


def test_documents_that_carry_a_similarity_are_not_embedded_again():
    """Keel's own retriever (and any that reports a similarity) is taken as it scores."""
    embeddings = CountingEmbeddings()
    scored = StaticRetriever(documents=[passage_doc(LIGHTHOUSE, similarity=0.42)])
    [[document]] = search_parallel([(scored, QUESTION)], embeddings=embeddings)
    assert embeddings.document_calls == [] and embeddings.query_calls == 0
    assert document.metadata["score"] == 0.42


def test_a_document_id_and_a_readable_source_from_whatever_the_document_has():
    cases = [
        (Document(page_content="a", id="abc", metadata={"doc_id": "keel-1", "source": "s.pdf"}), "keel-1", "s.pdf"),
        (Document(page_content="a", id="abc", metadata={"source": "s.pdf"}), "abc", "s.pdf"),
        (Document(page_content="a", metadata={"id": 7, "title": "Ferry guide"}), "7", "Ferry guide"),
        (Document(page_content="a", metadata={"file_path": "/docs/fees.pdf"}), "/docs/fees.pdf", "/docs/fees.pdf"),
    ]
    passages = passages_from_documents([document for document, _, _ in cases])
    assert [(p["doc_id"], p["source"]) for p in passages] == [(doc_id, source) for _, doc_id, source in cases]
    bare = passages_from_documents([Document(page_content="same text"), Document(page_content="same text")])
    assert bare[0]["doc_id"] and bare[0]["doc_id"] == bare[1]["doc_id"], "no id at all: one id per text"
