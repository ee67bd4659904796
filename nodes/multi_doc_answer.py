"""multi_doc_answer: one retriever per relevant document (and per sub-question), all at once,
each with its Hamilton share of K_max children (retrievers/k_sizing.py), capped by the children its document
holds; results merged so that every document is represented before any gets a second passage.

The route's passages (its hits and the follow-up cache) come after the per-document ones, then
the pages around the hits; the merged context becomes the conversation's cached context. The
question's vector is the one route_query computed (retrievers/fanout.py's per-process memo), so
the question is embedded once per turn, not once per node.
"""

from __future__ import annotations

from langchain_core.runnables import Runnable, RunnableConfig

from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import KeelState, Route
from keel.nodes.answering import run_answer_graph
from keel.retrievers.factory import conversation_uploads, keel_store_of
from keel.retrievers.fanout import query_vectors, search_scopes
from keel.retrievers.followup_cache import followup_cache_for
from keel.retrievers.passages import (
    document_id,
    interleave_by_document,
    is_relevant,
    merge_passages,
    parent_ids_of,
    passage_key,
    passages_from_documents,
)


def multi_doc_answer(state: KeelState, config: RunnableConfig, *, components: Components, answer_graph: Runnable) -> dict:
    """Answer from several documents: each searched on its own, the passages merged, then the subgraph."""
    cfg = Configuration.from_runnable_config(config)
    doc_ids = list(state.get("doc_ids", []))
    routed = list(state.get("passages", []))
    store = keel_store_of(components.retriever_for(cfg, doc_ids or None))
    children = _children_per_document(store, cfg) if store is not None else {}
    per_doc = search_scopes(
        state["question"], components.retriever_for, cfg, [[doc_id] for doc_id in doc_ids], config,
        available=[children.get(doc_id) for doc_id in doc_ids], embeddings=components.embedder(cfg),
        subquestions=state.get("subquestions") or None,  # route_query's split (the rules' when it searched none)
    )
    user_files = set(cfg.doc_ids) | set(conversation_uploads(store, cfg))
    documents = [
        document
        for doc_id, found in zip(doc_ids, per_doc, strict=False)
        for document in found
        if document_id(document) == doc_id  # a retriever that ignores the scope
    ]
    relevant = [(d, p) for d, p in zip(documents, passages_from_documents(documents), strict=False) if is_relevant(p, cfg, user_files)]
    passages = merge_passages(interleave_by_document([p for _, p in relevant]), routed)
    cache = followup_cache_for(store, cfg)
    if cache and passages:
        # route_query cached this turn's routed passages with their parent ids a moment ago
        earlier = cache.get(cfg.user_id, cfg.thread_id)
        remembered = list(zip(earlier.passages, earlier.parent_ids, strict=False)) if earlier else []
        parents = parent_ids_of([d for d, _ in relevant], remembered)
        cache.put(cfg.user_id, cfg.thread_id, state["question"], [dict(p) for p in passages], doc_ids,
                  question_vector=query_vectors(store.embeddings, [state["question"]], cfg.query_vector_memo_size)[0],
                  parent_ids=[parents.get(passage_key(p)) for p in passages])
    return run_answer_graph(state, config, components, answer_graph, passages, Route.MULTI_DOC)


def _children_per_document(store, cfg: Configuration) -> dict[str, int]:
    """Children each of the user's documents holds: no retriever asks a document for more."""
    return {doc["doc_id"]: int(doc["children"]) for doc in store.list_documents(cfg.user_id)}
