"""route_query: retrieval decides the route (seed 003), with seed 002's follow-up speed-ups.

1. The question is split into sub-questions (retrievers/fanout.py); every sub-question is searched
   at once, over all the user's documents (or only the ones attached to this question), and over
   the files uploaded in this conversation, each search with its Hamilton share of K_max children.
2. A follow-up takes the conversation's cached context at once (one Redis GET) and merges it after
   what its own search found.
3. Relevant = a passage at or above ``relevance_threshold``; passages of files the user attached
   or uploaded in this conversation count whatever their score (seed 003: "or user uploaded a
   single file"); a retriever that reports no scores is trusted.
4. Distinct documents among the relevant passages: none → pretrained_corpus, one → single_doc,
   more → multi_doc. The passages: new hits, then the cached context, then the pages around
   each hit (±page_expansion_pages, seed 002), so the answer budget takes them in that order.

With a user's own BaseRetriever there is no Keel store: steps 2, the conversation-upload search
and page expansion are skipped; sub-questions are still searched in parallel.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from langchain_core.runnables import RunnableConfig

from graph.configuration import Configuration
from graph.state import KeelState, Passage, Route
from nodes.components import Components
from nodes.context import merge_passages, passages_from_documents
from retrievers.factory import keel_store_of
from retrievers.fanout import merge_round_robin, search_scopes
from retrievers.followup_cache import followup_cache_for

log = logging.getLogger(__name__)


def route_query(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    question = state["question"]
    attached = list(cfg.doc_ids)
    base = components.retriever_for(cfg, attached or None)
    store = keel_store_of(base)
    cache = followup_cache_for(store, cfg)
    uploads = conversation_uploads(store, cfg) if not attached else []

    scopes: list[list[str] | None] = [attached or None] + ([uploads] if uploads else [])
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="keel-followup") as pool:
        cached = pool.submit(cache.get, cfg.user_id, cfg.thread_id) if cache else None
        found = search_scopes(question, components.retriever_for, cfg, scopes, config)
        cached_context = cached.result() if cached else None

    documents = merge_round_robin(found)
    user_files = set(attached) | set(uploads)
    kept = [(d, p) for d, p in zip(documents, passages_from_documents(documents)) if is_relevant(p, cfg, user_files)]
    fresh = [p for _, p in kept]
    neighbours: list[Passage] = []
    if kept and store is not None and cfg.page_expansion_pages > 0:
        neighbours = passages_from_documents(base.expand_pages([d for d, _ in kept], cfg.page_expansion_pages))
    remembered = list(cached_context.passages) if cached_context else []
    if attached:  # a question about attached files uses no other document's context
        remembered = [p for p in remembered if p.get("doc_id") in user_files]
    # new hits first, then the cached context (seed 002), then the pages around the hits
    passages = merge_passages(fresh, [Passage(**p) for p in remembered], neighbours)

    doc_ids = list(dict.fromkeys(p["doc_id"] for p in passages))
    if attached and passages:
        doc_ids = [d for d in attached if d in doc_ids] or doc_ids
    route = Route.PRETRAINED_CORPUS if not passages else Route.SINGLE_DOC if len(doc_ids) == 1 else Route.MULTI_DOC
    if cache and passages:
        cache.put(cfg.user_id, cfg.thread_id, question, [dict(p) for p in passages], doc_ids)
    if cached_context:
        log.debug("follow-up: %d cached passage(s) merged after %d new", len(remembered), len(fresh))
    return {"route": route.value, "passages": passages, "doc_ids": doc_ids}


def is_relevant(passage: Passage, cfg: Configuration, user_files: set[str] | frozenset[str] = frozenset()) -> bool:
    """Over the relevance threshold; or from a file the user attached or uploaded here; or from a
    retriever that reports no similarity at all (a user's own, trusted as-is)."""
    if passage["similarity"] >= cfg.relevance_threshold or passage["doc_id"] in user_files:
        return True
    return passage["similarity"] == 0.0 and passage["score"] == 0.0


def conversation_uploads(store, cfg: Configuration) -> list[str]:
    """Doc ids the user uploaded in this conversation (thread_id); none without a Keel store."""
    if store is None or not cfg.thread_id:
        return []
    try:
        return store.conversation_documents(cfg.user_id, cfg.thread_id)
    except ValueError:  # a thread id that cannot be a tag (it was never used to ingest)
        return []


def pick_answering_node(state: KeelState) -> str:
    return {
        Route.SINGLE_DOC.value: "single_doc_prompt",
        Route.MULTI_DOC.value: "multi_doc_prompt",
    }.get(state.get("route", ""), "pretrained_corpus_prompt")
