"""Follow-ups: sub-questions searched in parallel, and the follow-up cache. Logic with fakes, then
the cache and the follow-up turn on the real Redis Stack with real embeddings."""

from __future__ import annotations

import threading
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage

from keel.core.configuration import Configuration
from keel.retrievers.fanout import merge_round_robin, search_parallel, search_scopes, split_subquestions
from keel.retrievers.followup_cache import FollowUpCache
from keel.retrievers.k_sizing import k_max_for_config
from tests.fakes import StaticRetriever

# --- sub-questions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, expected",
    [
        ("Who built the lighthouse and when was it painted?", ["Who built the lighthouse?", "when was it painted?"]),
        ("Who built the lighthouse? How far can its lamp be seen?", ["Who built the lighthouse?", "How far can its lamp be seen?"]),
        ("How do I file a claim and what documents do I need; where do I send them?",
         ["How do I file a claim?", "what documents do I need?", "where do I send them?"]),
        ("I read the report. Who built the lighthouse?", ["I read the report. Who built the lighthouse?"]),
        ("Really? Who built the lighthouse? And who kept it afterwards?",
         ["Really? Who built the lighthouse?", "And who kept it afterwards?"]),
    ],
)
def test_compound_questions_are_split(question, expected):
    assert split_subquestions(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What are the fees and opening hours?",  # "and" joins nouns, not questions
        "What did Mara Holt and Ilse Brand do?",
        "Describe the harbour and explain the ferry times.",  # not questions
        "Who built it and when?",  # the second part is too short to stand alone
        "Is it red and white?",
    ],
)
def test_simple_questions_are_not_split(question):
    assert split_subquestions(question) == [question]


def test_more_parts_than_allowed_are_searched_together_in_the_last():
    question = "Who built it first? Who kept it later? Who painted it red? Who owns it today?"
    assert split_subquestions(question, max_parts=2) == [
        "Who built it first?", "Who kept it later? Who painted it red? Who owns it today?"
    ]
    assert split_subquestions(question, max_parts=1) == [question]


TOKENS = ["a", "bb", "ccc", "and", "who", "what", "is", "as well as", "?", ";", ",", "."]


@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join), st.integers(1, 6))
def test_splitting_is_deterministic_bounded_and_invents_no_words(question, max_parts):
    parts = split_subquestions(question, max_parts)
    assert parts == split_subquestions(question, max_parts)
    assert len(parts) <= max(1, max_parts)
    assert all(part.strip() for part in parts)
    original = set(question.replace("?", " ").replace(";", " ").replace(",", " ").replace(".", " ").split())
    for part in parts:
        assert set(part.replace("?", " ").replace(";", " ").replace(",", " ").replace(".", " ").split()) <= original


# --- parallel search and merging --------------------------------------------------------------------


class BarrierRetriever(StaticRetriever):
    """Waits until ``parties`` searches are running at once: a serial run times out and fails.
    The timeout is only ever reached by a serial run, so it is generous for a loaded machine."""

    barrier: object = None

    def _get_relevant_documents(self, query, *, run_manager):
        self.barrier.wait(timeout=60)
        return [Document(page_content=f"answer to {query}", metadata={"doc_id": "d", "page": 1})]


def test_sub_question_searches_run_at_the_same_time():
    barrier = threading.Barrier(3)
    retriever = BarrierRetriever(documents=[], barrier=barrier)
    results = search_parallel([(retriever, "q1"), (retriever, "q2"), (retriever, "q3")])
    assert [r[0].page_content for r in results] == ["answer to q1", "answer to q2", "answer to q3"]
    assert not barrier.broken


def doc(parent: str, score: float, doc_id: str = "d") -> Document:
    return Document(id=parent, page_content=parent, metadata={"doc_id": doc_id, "score": score, "max_similarity": score})


def test_round_robin_merge_represents_every_list_first_and_keeps_the_better_score():
    first = [doc("a1", 0.9), doc("shared", 0.5), doc("a3", 0.4)]
    second = [doc("b1", 0.8), doc("shared", 0.7)]
    merged = merge_round_robin([first, second])
    assert [d.id for d in merged] == ["a1", "b1", "shared", "a3"]
    assert merged[2].metadata["max_similarity"] == 0.7
    without_ids = [Document(page_content="same", metadata={"doc_id": "x", "page": 1})] * 2
    assert len(merge_round_robin([without_ids])) == 1


def test_every_search_gets_its_hamilton_share_of_k_max():
    seen: list[tuple[int, tuple | None, str]] = []
    lock = threading.Lock()

    class Recording(StaticRetriever):
        k: int = 0
        scope: tuple | None = None

        def _get_relevant_documents(self, query, *, run_manager):
            with lock:
                seen.append((self.k, self.scope, query))
            return [doc(f"{self.scope}-{query}", 0.5, doc_id=(self.scope or ("all",))[0])]

    def factory(cfg, doc_ids):
        assert cfg.retrieval_k_sizing == "fixed" and cfg.page_expansion_pages == 0
        return Recording(documents=[], k=cfg.retrieval_k_children, scope=tuple(doc_ids) if doc_ids else None)

    cfg = Configuration()
    per_scope = search_scopes(
        "Who built the lighthouse and when was it painted?", factory, cfg, [["d1"], ["d2"], ["d3"]],
        available=[None, 3, None],
    )
    assert len(seen) == 6 and {q for _, _, q in seen} == {"Who built the lighthouse?", "when was it painted?"}
    assert sum(k for k, _, _ in seen) == k_max_for_config(cfg)
    assert all(k <= 3 for k, scope, _ in seen if scope == ("d2",))
    assert [len(found) for found in per_scope] == [2, 2, 2]


# --- the follow-up cache on the real Redis -----------------------------------------------------------

PASSAGE = {"number": 1, "text": "The lighthouse was built by Mara Holt.", "source": "r.pdf", "page": 2,
           "doc_id": "d1", "score": 0.8, "similarity": 0.8}


@pytest.mark.real
def test_cache_round_trip_ttl_and_keys_per_user_and_conversation(redis_client):
    cache = FollowUpCache(redis_client, namespace=f"test_cache_{uuid.uuid4().hex[:6]}", ttl_seconds=120)
    cache.put("alice", "conv", "Who built it?", [PASSAGE], ["d1"])
    got = cache.get("alice", "conv")
    assert got.question == "Who built it?" and got.passages == [PASSAGE] and got.doc_ids == ["d1"]
    assert 0 < redis_client.ttl(cache.key("alice", "conv")) <= 120
    for user, conversation in [("bob", "conv"), ("alice", "conv2"), ("conv", "alice"), ("alice:conv", "x"), ("alice", "conv ")]:
        assert cache.get(user, conversation) is None, (user, conversation)
    redis_client.set(cache.key("bob", "conv"), "not json")
    assert cache.get("bob", "conv") is None
    assert cache.clear("alice", "conv") and cache.get("alice", "conv") is None
    with pytest.raises(ValueError, match="conversation_id"):
        cache.key("alice", "")
    with pytest.raises(ValueError, match="positive TTL"):
        FollowUpCache(redis_client, ttl_seconds=0)


ISLAND = [
    "Varden Island Annual Report. This report describes the island's harbour, its lighthouse and its school.",
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
    "Its lamp can be seen from 22 nautical miles away. The lighthouse is painted red and white.",
    "The island school has 48 pupils and two teachers. The ferry to the mainland leaves every morning at 7 am.",
]


@pytest.fixture(scope="module")
def island(redis_url, keel_config, tmp_path_factory):
    from keel.loaders.pipeline import ingest
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store
    from tests.pdf_factory import make_pdf

    cfg = Configuration(
        redis_url=redis_url, keel_home=keel_config.keel_home, index_name=f"test_followup_{uuid.uuid4().hex[:6]}",
        user_id=f"fu-{uuid.uuid4().hex[:6]}", parent_chunk_tokens=120, child_chunk_tokens=24, child_chunk_overlap=4,
    )
    store = get_vector_store(cfg, get_embeddings(cfg))
    pdf = make_pdf(tmp_path_factory.mktemp("followup") / "island.pdf", ISLAND)
    assert ingest([pdf], store, cfg, user_id=cfg.user_id).errors == []
    yield cfg
    store.client.ft(cfg.index_name).dropindex(delete_documents=True)


def _route(cfg: Configuration, question: str, thread: str, history=(), searches: list | None = None, **overrides):
    """route_query for one turn; ``searches`` collects the scopes of the retrievers it makes
    (the first is its base retriever, every further one a search)."""
    from keel.models.embeddings import get_embeddings
    from keel.components import Components
    from keel.nodes.route_query import route_query
    from keel.retrievers.factory import default_retriever

    embeddings = get_embeddings()

    def factory(c, doc_ids):
        if searches is not None:
            searches.append(doc_ids)
        return default_retriever(c, embeddings, doc_ids)

    configurable = {**{f: getattr(cfg, f) for f in ("redis_url", "keel_home", "index_name", "user_id",
                    "parent_chunk_tokens", "child_chunk_tokens")}, "thread_id": thread, **overrides}
    state = {"question": question, "messages": [*history, HumanMessage(question)]}
    return route_query(state, {"configurable": configurable}, components=Components(retriever_factory=factory))


VAGUE_FOLLOW_UP = "Could you say that again, more briefly please?"
FIRST = "Who built the Varden lighthouse?"
HISTORY = [HumanMessage(FIRST), AIMessage("Mara Holt built it.")]


@pytest.mark.real
def test_a_follow_up_uses_the_cached_context_at_once(island):
    thread = uuid.uuid4().hex
    first = _route(island, FIRST, thread)
    assert first["route"] == "single_doc" and "Mara Holt" in first["passages"][0]["text"]
    # the same history in a fresh conversation: the messages alone are no context (the vague
    # question finds nothing relevant on its own); the conversation's cache is what carries it
    assert _route(island, VAGUE_FOLLOW_UP, uuid.uuid4().hex, HISTORY)["route"] == "pretrained_corpus"
    follow_up = _route(island, VAGUE_FOLLOW_UP, thread, HISTORY)
    assert follow_up["route"] == "single_doc"
    assert follow_up["passages"][0]["text"] == first["passages"][0]["text"]
    # another user with the same conversation id gets nothing of it
    assert _route(island, VAGUE_FOLLOW_UP, thread, HISTORY, user_id="someone-else")["route"] == "pretrained_corpus"
    # with the cache off, the follow-up is on its own again
    assert _route(island, VAGUE_FOLLOW_UP, thread, HISTORY, followup_cache_ttl_seconds=0)["route"] == "pretrained_corpus"


@pytest.mark.real
def test_when_the_cache_fills_the_context_no_search_runs(island):
    thread = uuid.uuid4().hex
    first = _route(island, FIRST, thread, page_expansion_pages=0)
    searches: list = []
    # similar enough to the cached question (no cue needed), and the cached passage answers it
    # on its own: with one passage per context the cache suffices and route_query does not search
    again = _route(island, "How far can the Varden lighthouse be seen?", thread, searches=searches,
                   max_context_parents=1, page_expansion_pages=0)
    assert len(searches) == 1, "only the base retriever was made: no search"
    assert again["route"] == "single_doc" and again["passages"][0]["text"] == first["passages"][0]["text"]
    searches.clear()
    _route(island, "How far can the Varden lighthouse be seen?", thread, searches=searches, page_expansion_pages=0)
    assert len(searches) > 1, "with room for more passages than the cache has, the search runs too"


@pytest.mark.real
def test_a_follow_up_merges_new_results_before_the_cached_ones(island):
    thread = uuid.uuid4().hex
    first = _route(island, FIRST, thread, page_expansion_pages=0)
    second = _route(island, "And what about the island school, how many pupils?", thread, page_expansion_pages=0)
    texts = [p["text"] for p in second["passages"]]
    assert "48 pupils" in texts[0]
    assert first["passages"][0]["text"] in texts, "the cached lighthouse passage is kept after the new ones"
    assert [p["number"] for p in second["passages"]] == list(range(1, len(texts) + 1))
    assert len(set(texts)) == len(texts)


@pytest.mark.real
def test_an_unrelated_question_in_the_same_thread_gets_no_cached_passages(island):
    thread = uuid.uuid4().hex
    first = _route(island, FIRST, thread, page_expansion_pages=0)
    lighthouse = first["passages"][0]["text"]
    off_topic = _route(island, "What is the capital of France?", thread, page_expansion_pages=0)
    assert off_topic == {"route": "pretrained_corpus", "passages": [], "doc_ids": []}
    other = _route(island, "How many pupils does the island school have?", thread, page_expansion_pages=0)
    assert "48 pupils" in other["passages"][0]["text"]
    assert lighthouse not in [p["text"] for p in other["passages"]], "a new topic does not drag the old context along"
    # the cache now holds the school turn; a vague follow-up gets that, not the lighthouse
    vague = _route(island, VAGUE_FOLLOW_UP, thread, page_expansion_pages=0)
    texts = [p["text"] for p in vague["passages"]]
    assert "48 pupils" in texts[0] and lighthouse not in texts and set(texts) <= {p["text"] for p in other["passages"]}


@pytest.mark.real
def test_the_cache_really_expires_after_the_configured_ttl(island, redis_client):
    """No step may race the TTL: a 1 s TTL checked "still there" after a real-embedding search
    failed whenever the machine was slow. The configured TTL is read back from Redis (a long one,
    so nothing expires meanwhile), then a short one is waited out by polling, with a deadline."""
    import time

    cache = FollowUpCache(redis_client, namespace=island.index_name, ttl_seconds=1)
    thread = uuid.uuid4().hex
    _route(island, FIRST, thread, followup_cache_ttl_seconds=3600)
    assert 3000 < redis_client.ttl(cache.key(island.user_id, thread)) <= 3600, "the configured TTL, not the default"
    assert _route(island, VAGUE_FOLLOW_UP, thread, followup_cache_ttl_seconds=3600)["route"] == "single_doc"

    short = uuid.uuid4().hex
    _route(island, FIRST, short, followup_cache_ttl_seconds=1)
    remaining = redis_client.pttl(cache.key(island.user_id, short))  # ms; -2 when already gone, -1 if no TTL
    assert remaining == -2 or 0 < remaining <= 1000, remaining
    deadline = time.monotonic() + 30  # far past the 1 s TTL: only a key that never expires reaches it
    while cache.get(island.user_id, short) is not None:
        assert time.monotonic() < deadline, "the cached context outlived its 1 s TTL by 30 s"
        time.sleep(0.1)
    assert _route(island, VAGUE_FOLLOW_UP, short, followup_cache_ttl_seconds=1)["route"] == "pretrained_corpus"


# --- the follow-up rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, cue",
    [
        (VAGUE_FOLLOW_UP, True), ("What about the school?", True), ("And the ferry?", True), ("Is it red?", True),
        ("Tell me more about the ferry.", True), ("What is the capital of France?", False),
        ("Who built the Varden lighthouse?", False), ("Itself a lighthouse?", False), ("Thatch roofs?", False),
    ],
)
def test_follow_up_cues_are_whole_words(question, cue):
    from keel.retrievers.followup_cache import has_followup_cue

    assert has_followup_cue(question, Configuration().followup_cues) is cue


def test_the_similarity_rule_uses_the_configured_threshold():
    from keel.retrievers.followup_cache import CachedContext, is_follow_up

    cached = CachedContext(question="q", passages=[], question_vector=[1.0, 0.0])
    at_60_degrees = [0.5, 0.75**0.5]  # cosine 0.5
    assert is_follow_up("Where is the harbour?", at_60_degrees, cached, Configuration(followup_similarity=0.5))
    assert not is_follow_up("Where is the harbour?", at_60_degrees, cached, Configuration(followup_similarity=0.6))
    assert is_follow_up("Where is it?", [0.0, 1.0], cached, Configuration(followup_similarity=0.6))  # a cue
    assert not is_follow_up("Where is the harbour?", [0.0, 1.0], CachedContext("q", []), Configuration())  # no vector cached


def test_merging_never_changes_the_documents_a_retriever_handed_out():
    shared = doc("p", 0.5)
    merged = merge_round_robin([[shared], [doc("p", 0.9)]])
    assert merged[0].metadata["max_similarity"] == 0.9 and shared.metadata["max_similarity"] == 0.5
