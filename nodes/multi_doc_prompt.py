"""multi_doc_prompt: one retriever per relevant document (and per sub-question), all at once,
each with its Hamilton share of K_max children (seed 003), capped by the children its document
holds; results merged so that every document is represented before any gets a second passage.

The route's passages (its hits and the follow-up cache) come after the per-document ones, then
the pages around the hits; the merged context becomes the conversation's cached context.
"""

from __future__ import annotations

from langchain_core.runnables import Runnable, RunnableConfig

from graph.configuration import Configuration
from graph.state import KeelState, Route
from nodes.answering import run_answer_graph
from nodes.components import Components
from nodes.context import interleave_by_document, merge_passages, passages_from_documents
from nodes.route_query import conversation_uploads, is_relevant
from retrievers.factory import keel_store_of
from retrievers.fanout import search_scopes
from retrievers.followup_cache import followup_cache_for


def multi_doc_prompt(state: KeelState, config: RunnableConfig, *, components: Components, answer_graph: Runnable) -> dict:
    cfg = Configuration.from_runnable_config(config)
    doc_ids = list(state.get("doc_ids", []))
    routed = list(state.get("passages", []))
    store = keel_store_of(components.retriever_for(cfg, doc_ids or None))
    children = _children_per_document(store, cfg) if store is not None else {}
    per_doc = search_scopes(
        state["question"], components.retriever_for, cfg, [[doc_id] for doc_id in doc_ids], config,
        available=[children.get(doc_id) for doc_id in doc_ids],
    )
    user_files = set(cfg.doc_ids) | set(conversation_uploads(store, cfg))
    documents = [
        document
        for doc_id, found in zip(doc_ids, per_doc)
        for document in found
        if str(document.metadata.get("doc_id", doc_id)) == doc_id  # a retriever that ignores the scope
    ]
    fresh = [p for p in passages_from_documents(documents) if is_relevant(p, cfg, user_files)]
    passages = merge_passages(interleave_by_document(fresh), routed)
    cache = followup_cache_for(store, cfg)
    if cache and passages:
        cache.put(cfg.user_id, cfg.thread_id, state["question"], [dict(p) for p in passages], doc_ids)
    return run_answer_graph(state, config, components, answer_graph, passages, Route.MULTI_DOC)


def _children_per_document(store, cfg: Configuration) -> dict[str, int]:
    """Children each of the user's documents holds: no retriever asks a document for more."""
    return {doc["doc_id"]: int(doc["children"]) for doc in store.list_documents(cfg.user_id)}
