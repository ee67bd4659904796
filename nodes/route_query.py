"""route_query: retrieval decides the route, with follow-up speed-ups (cached context, parallel search).

1. The question is split into sub-questions (chains/question_split.py: by a chat model that takes
   tools, else by the rules of retrievers/fanout.py); every sub-question is searched
   at once, over all the user's documents (or only the ones attached to this question), and over
   the files uploaded in this conversation, each search with its Hamilton share of K_max children.
2. The conversation's cached context (one Redis GET) is used only when the question is a
   follow-up and only the cached passages still relevant to the merged question
   (retrievers/followup_cache.py states the rule). When they alone fill the context the search
   is skipped; otherwise it runs with the question vector the follow-up check already computed.
3. Relevant = a passage at or above ``relevance_threshold``; passages of files the user attached
   or uploaded in this conversation count whatever their score (an upload is relevant because the user
   chose it). A retriever that reports no similarity has its documents scored with the configured
   embeddings (retrievers/scoring.py), so its irrelevant finds are left out like Keel's own.
4. Distinct documents among the relevant passages: none → pretrained_corpus, one → single_doc,
   more → multi_doc. The passages: new hits, then the cached context, then the pages around
   each hit (±page_expansion_pages), so the answer budget takes them in that order.

With a user's own BaseRetriever there is no Keel store: step 2, the conversation-upload search
and page expansion are skipped; sub-questions are still searched in parallel.
"""

from __future__ import annotations

import logging

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from keel.chains.question_split import plan_subquestions
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import KeelState, Passage, Route
from keel.retrievers.factory import conversation_uploads, keel_store_of
from keel.retrievers.fanout import merge_round_robin, query_vectors, search_scopes
from keel.retrievers.followup_cache import FollowUpContext, followup_cache_for, followup_context
from keel.retrievers.passages import (
    is_relevant,
    merge_passages,
    parent_ids_of,
    passage_key,
    passages_from_documents,
)

log = logging.getLogger(__name__)


def route_query(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    """Search the user's documents once and choose the answering node: one document, several, or none."""
    cfg = Configuration.from_runnable_config(config)
    question = state["question"]
    attached = list(cfg.doc_ids)
    base = components.retriever_for(cfg, attached or None)
    store = keel_store_of(base)
    cache = followup_cache_for(store, cfg)

    def embed(texts: list[str]) -> list[list[float]]:
        return query_vectors(store.embeddings, texts, cfg.query_vector_memo_size)

    cached = cache.get(cfg.user_id, cfg.thread_id) if cache else None
    followup = followup_context(store, cfg, cached, question, embed) if cached else None
    uploads: list[str] = []
    subquestions: list[str] = []
    split_usage = None
    if followup and followup.sufficient:
        found: list[list[Document]] = []  # the cache alone fills the context: no search to wait on
    else:
        uploads = conversation_uploads(store, cfg) if not attached else []
        scopes: list[list[str] | None] = [attached or None] + ([uploads] if uploads else [])
        subquestions, split_usage = plan_subquestions(question, cfg, components, config)
        found = search_scopes(question, components.retriever_for, cfg, scopes, config,
                              embeddings=components.embedder(cfg), subquestions=subquestions)

    documents = merge_round_robin(found)
    user_files = set(attached) | set(uploads)
    kept = [(d, p) for d, p in zip(documents, passages_from_documents(documents), strict=False) if is_relevant(p, cfg, user_files)]
    neighbours: list[Document] = []
    if kept and store is not None and cfg.page_expansion_pages > 0:
        neighbours = base.expand_pages([d for d, _ in kept], cfg.page_expansion_pages)
    remembered = _remembered(followup, user_files if attached else None)
    # new hits first, then the cached context of the last turn, then the pages around the hits
    passages = merge_passages([p for _, p in kept], [Passage(**p) for p, _ in remembered], passages_from_documents(neighbours))

    doc_ids = list(dict.fromkeys(p["doc_id"] for p in passages))
    if attached and passages:
        doc_ids = [d for d in attached if d in doc_ids] or doc_ids
    route = Route.PRETRAINED_CORPUS if not passages else Route.SINGLE_DOC if len(doc_ids) == 1 else Route.MULTI_DOC
    if cache and passages:
        parents = parent_ids_of([d for d, _ in kept] + neighbours, remembered)
        cache.put(cfg.user_id, cfg.thread_id, question, [dict(p) for p in passages], doc_ids,
                  question_vector=embed([question])[0], parent_ids=[parents.get(passage_key(p)) for p in passages])
    if followup:
        log.debug("follow-up: %d cached passage(s) kept after %d new", len(remembered), len(kept))
    update = {"route": route.value, "passages": passages, "doc_ids": doc_ids, "subquestions": subquestions}
    return {**update, "usage": split_usage} if split_usage else update


def _remembered(followup: FollowUpContext | None, only_docs: set[str] | None) -> list[tuple[dict, str | None]]:
    """The follow-up's cached (passage, parent id) pairs; with attached files, only theirs."""
    if followup is None:
        return []
    pairs = list(zip(followup.passages, followup.parent_ids, strict=False))
    return [pair for pair in pairs if only_docs is None or pair[0].get("doc_id") in only_docs]


def pick_answering_node(state: KeelState) -> str:
    """The answering node of the route route_query chose (none found: the pretrained corpus)."""
    return {
        Route.SINGLE_DOC.value: "single_doc_answer",
        Route.MULTI_DOC.value: "multi_doc_answer",
    }.get(state.get("route", ""), "pretrained_corpus_answer")
