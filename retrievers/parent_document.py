"""Parent document retrieval (seed 003): search small children, answer with their big parents.

KNN over the user's children → group by parent → parent score = sum of its children's cosine
similarities (seed 003's reranking score) → parents fetched in one round trip, best first.
Issue 4 adds streaming, logistic k and multi-retriever apportionment on top of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from stores.tag_filters import validate_tag_id


def rank_parents(hits: Sequence[tuple[Document, float]]) -> list[tuple[str, float, float, int]]:
    """(parent_id, score, max_similarity, child_hits) per parent, best score first.

    Ties keep the order in which the parents' best children were found (nearest first)."""
    totals: dict[str, list[float]] = {}
    for child, similarity in hits:
        entry = totals.setdefault(child.metadata["parent_id"], [0.0, float("-inf"), 0])
        entry[0] += similarity
        entry[1] = max(entry[1], similarity)
        entry[2] += 1
    ranked = [(parent_id, total, best, count) for parent_id, (total, best, count) in totals.items()]
    return sorted(ranked, key=lambda row: -row[1])


class ParentDocumentRetriever(BaseRetriever):
    """Returns the user's parent chunks for a query, scores in metadata (``score``,
    ``max_similarity``, ``child_hits``). ``store`` is a ``stores.vector_store.RedisChunkStore``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    user_id: str
    conversation_id: str | None = None
    doc_ids: list[str] | None = None
    k_children: int | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun | None = None
    ) -> list[Document]:
        validate_tag_id("user_id", self.user_id)
        k = self.k_children or self.store.cfg.retrieval_k_children
        query_embedding = self.store.embeddings.embed_query(query)
        hits = self.store.search_children(
            query_embedding, k, self.user_id, conversation_id=self.conversation_id, doc_ids=self.doc_ids
        )
        ranked = rank_parents(hits)
        parents = {
            parent.id: parent
            for parent in self.store.get_parents([row[0] for row in ranked], user_id=self.user_id)
        }
        results = []
        for parent_id, score, best, count in ranked:
            parent = parents.get(parent_id)
            if parent is None:  # expired between the search and the fetch
                continue
            parent.metadata.update(score=score, max_similarity=best, child_hits=count, parent_id=parent_id)
            results.append(parent)
        return results
