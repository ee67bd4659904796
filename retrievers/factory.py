"""Keel's default retriever for one request: the parent retriever over the user's chunks."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from graph.configuration import Configuration


def default_retriever(cfg: Configuration, embeddings: Embeddings, doc_ids: list[str] | None = None) -> BaseRetriever:
    from retrievers.parent_document import ParentDocumentRetriever
    from stores.connections import get_vector_store

    return ParentDocumentRetriever(
        store=get_vector_store(cfg, embeddings),
        user_id=cfg.user_id,
        doc_ids=doc_ids,
        k_children=cfg.retrieval_k_children,
    )
