"""route_query and multi_doc_answer on the real Redis Stack with real embeddings: what retrieval
finds decides the route; multi-doc retrieval runs per document in parallel with Hamilton shares;
files uploaded in the conversation count; the context fits the window that is really left."""

from __future__ import annotations

import threading
import uuid

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.models.embeddings import get_embeddings
from keel.components import Components
from keel.nodes.route_query import route_query
from keel.retrievers.factory import default_retriever
from keel.retrievers.k_sizing import k_max_for_config
from keel.retrievers.parent_document import KeelParentRetriever
from tests.fakes import WordTokenizer

pytestmark = pytest.mark.real

LIGHTHOUSE = "The Varden lighthouse was built in 1874 by the engineer Mara Holt. It is painted red and white."
BAKERY = "Cinnamon buns are baked at 200 degrees for twelve minutes and glazed with sugar syrup."
TIDES = "Spring tides happen twice a month, when the sun and the moon are in line."


@pytest.fixture(scope="module")
def library(redis_url, keel_config):
    from keel.loaders.pipeline import ingest_text
    from keel.stores.connections import get_vector_store

    cfg = Configuration(
        redis_url=redis_url, keel_home=keel_config.keel_home, index_name=f"test_route_{uuid.uuid4().hex[:6]}",
        user_id=f"route-{uuid.uuid4().hex[:6]}",
    )
    store = get_vector_store(cfg, get_embeddings(cfg))
    ids = {}
    for name, text, conversation in [("lighthouse.txt", LIGHTHOUSE, None), ("bakery.txt", BAKERY, None),
                                      ("tides.txt", TIDES, "conv-upload")]:
        report = ingest_text(text, name, store, cfg, user_id=cfg.user_id, conversation_id=conversation)
        assert report.errors == []
        ids[name] = report.doc_ids[0]
    yield cfg, ids
    store.client.ft(cfg.index_name).dropindex(delete_documents=True)


def configurable(cfg: Configuration, **overrides) -> dict:
    names = ("redis_url", "keel_home", "index_name", "user_id")
    return {"configurable": {**{n: getattr(cfg, n) for n in names}, **overrides}}


def route(cfg, question, **overrides):
    state = {"question": question, "messages": [HumanMessage(question)]}
    return route_query(state, configurable(cfg, **overrides), components=Components(embeddings=get_embeddings()))


def test_one_relevant_document_routes_to_single_doc(library):
    cfg, ids = library
    result = route(cfg, "Who built the Varden lighthouse?")
    assert result["route"] == "single_doc" and result["doc_ids"] == [ids["lighthouse.txt"]]
    assert all(p["similarity"] >= cfg.relevance_threshold for p in result["passages"])


def test_a_compound_question_over_two_documents_routes_to_multi_doc(library):
    cfg, ids = library
    result = route(cfg, "Who built the Varden lighthouse and how long are cinnamon buns baked?")
    assert result["route"] == "multi_doc"
    assert set(result["doc_ids"]) == {ids["lighthouse.txt"], ids["bakery.txt"]}


def test_nothing_relevant_routes_to_the_pretrained_corpus(library):
    cfg, _ = library
    result = route(cfg, "What is the capital city of Australia?")
    assert result == {"route": "pretrained_corpus", "passages": [], "doc_ids": [],
                      "subquestions": ["What is the capital city of Australia?"]}


def test_a_file_uploaded_in_this_conversation_counts(library):
    cfg, ids = library
    elsewhere = route(cfg, "Who built the Varden lighthouse?", thread_id="another-conversation")
    here = route(cfg, "Who built the Varden lighthouse?", thread_id="conv-upload")
    assert elsewhere["route"] == "single_doc"
    assert here["route"] == "multi_doc" and set(here["doc_ids"]) == {ids["lighthouse.txt"], ids["tides.txt"]}
    assert here["passages"][0]["doc_id"] == ids["lighthouse.txt"], "the relevant passage still comes first"


def test_attached_documents_limit_the_search(library):
    cfg, ids = library
    result = route(cfg, "Who built the Varden lighthouse?", doc_ids=[ids["bakery.txt"]])
    assert result["route"] == "single_doc" and result["doc_ids"] == [ids["bakery.txt"]]
    assert {p["doc_id"] for p in result["passages"]} == {ids["bakery.txt"]}


def test_multi_doc_retrieves_each_document_in_parallel_with_hamilton_shares(library):
    cfg, ids = library
    calls: list[tuple[int, tuple, str]] = []
    lock = threading.Lock()
    embeddings = get_embeddings()

    class Recording(KeelParentRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            with lock:
                calls.append((self.k_children, tuple(self.doc_ids or ()), threading.current_thread().name))
            return super()._get_relevant_documents(query, run_manager=run_manager)

    def recording_factory(request_cfg, doc_ids):
        retriever = default_retriever(request_cfg, embeddings, doc_ids)
        return Recording(**{name: getattr(retriever, name) for name in type(retriever).model_fields})

    graph = build_graph(
        chat_model=FakeListChatModel(responses=["<answer>Mara Holt built it [Source 1].</answer>"] * 3),
        embeddings=embeddings, retriever_factory=recording_factory, tokenizer=WordTokenizer(),
    )
    updates = list(graph.stream(
        {"messages": [HumanMessage("Who built the Varden lighthouse and how long are cinnamon buns baked?")]},
        configurable(cfg, thread_id=uuid.uuid4().hex, llm_context_window=8192), stream_mode="updates",
        output_keys=["route", "passages"],  # a client's stream carries no passages; asked for here
    ))
    result = next(update["multi_doc_answer"] for update in updates if "multi_doc_answer" in update)
    assert result["route"] == "multi_doc"
    per_doc = [(k, scope) for k, scope, _ in calls if len(scope) == 1 and scope[0] in ids.values()]
    assert {scope[0] for _, scope in per_doc} == {ids["lighthouse.txt"], ids["bakery.txt"]}
    # 2 documents x 2 sub-questions share K_max, capped by the one child each document holds
    assert len(per_doc) == 4 and all(k == 1 for k, _ in per_doc)
    route_calls = [(k, scope) for k, scope, _ in calls if not scope]
    cfg_8k = Configuration(llm_context_window=8192)
    assert sum(k for k, _ in route_calls) == k_max_for_config(cfg_8k)
    assert all(name.startswith("keel-search") for _, _, name in calls), "searches ran in the thread pool"
    sources = {p["doc_id"] for p in result["passages"]}
    assert sources == {ids["lighthouse.txt"], ids["bakery.txt"]}
    first_two = [p["doc_id"] for p in result["passages"][:2]]
    assert set(first_two) == sources, "every document is represented before any gets a second passage"


def test_a_multi_doc_turn_embeds_each_sub_question_once(library):
    """route_query searches first; multi_doc_answer's per-document searches reuse its vectors."""
    from collections import Counter

    from langchain_core.embeddings import Embeddings

    cfg, ids = library
    real = get_embeddings()
    embedded: Counter = Counter()

    class Counting(Embeddings):
        def embed_documents(self, texts):
            embedded.update(texts)
            return real.embed_documents(texts)

        def embed_query(self, text):
            embedded[text] += 1
            return real.embed_query(text)

    graph = build_graph(
        chat_model=FakeListChatModel(responses=["<answer>Mara Holt built it [Source 1].</answer>"] * 3),
        embeddings=Counting(), tokenizer=WordTokenizer(),
    )
    updates = list(graph.stream(
        {"messages": [HumanMessage("Who built the Varden lighthouse and how long are cinnamon buns baked?")]},
        configurable(cfg, thread_id=uuid.uuid4().hex), stream_mode="updates",
    ))
    assert any("multi_doc_answer" in update for update in updates)
    assert embedded["Who built the Varden lighthouse?"] == 1
    assert embedded["how long are cinnamon buns baked?"] == 1
    from keel.retrievers.fanout import QUERY_VECTORS

    embedded.clear()  # without the memo each node embeds again: the count above is the memo's doing
    QUERY_VECTORS.clear()
    list(graph.stream(
        {"messages": [HumanMessage("Who built the Varden lighthouse and how long are cinnamon buns baked?")]},
        configurable(cfg, thread_id=uuid.uuid4().hex, query_vector_memo_size=0), stream_mode="updates",
    ))
    assert embedded["Who built the Varden lighthouse?"] == 2
