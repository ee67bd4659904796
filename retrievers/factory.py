"""Keel's default retriever for one request, and what the nodes need of Keel's own store.

The nodes never import keel/stores/: when the retriever they were given is Keel's parent retriever,
``keel_store_of`` hands them its store (for the follow-up cache, conversation uploads, page
expansion); for a user's own BaseRetriever it is None and those extras are skipped.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from keel.core.settings import IdentitySettings, RetrieverSettings
from keel.retrievers.k_sizing import k_for_config
from keel.retrievers.parent_document import KeelParentRetriever
from keel.stores.connections import get_vector_store


def default_retriever(cfg: RetrieverSettings, embeddings: Embeddings, doc_ids: list[str] | None = None) -> BaseRetriever:
    """Keel's retriever over the user's documents (or only ``doc_ids``): children searched, parents returned."""
    return KeelParentRetriever(
        store=get_vector_store(cfg, embeddings),
        user_id=cfg.user_id,
        doc_ids=doc_ids,
        k_children=k_for_config(cfg),
        page_expansion=max(0, cfg.page_expansion_pages),
        exact_term_boost=cfg.exact_term_boost,
    )


def keel_store_of(retriever: BaseRetriever):
    """The RedisChunkStore behind Keel's parent retriever; None for any other retriever."""
    return retriever.store if isinstance(retriever, KeelParentRetriever) else None


def conversation_uploads(store, cfg: IdentitySettings) -> list[str]:
    """Doc ids the user uploaded in this conversation (thread_id); none without a Keel store."""
    if store is None or not cfg.thread_id:
        return []
    try:
        return store.conversation_documents(cfg.user_id, cfg.thread_id)
    except ValueError:  # a thread id that cannot be a tag (it was never used to ingest)
        return []
