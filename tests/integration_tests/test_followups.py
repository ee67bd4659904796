"""The follow-up cache and the follow-up turn on the real Redis Stack with real embeddings; sub-question splitting,
parallel search and the follow-up rule with fakes are in unit_tests/test_followups.py."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from keel.core.configuration import Configuration
from keel.retrievers.followup_cache import FollowUpCache
from tests.varden_guide import ISLAND_REPORT_PAGES

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
    pdf = make_pdf(tmp_path_factory.mktemp("followup") / "island.pdf", ISLAND_REPORT_PAGES)
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
    assert off_topic == {"route": "pretrained_corpus", "passages": [], "doc_ids": [],
                         "subquestions": ["What is the capital of France?"]}
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
