"""The streaming parent document retriever: search small children, answer with parents.

KNN over the user's children (always filtered by the user's uuid; optionally by conversation,
documents and file names) → group by parent → parent score = sum of its children's cosine
similarities (the reranking score) → all parents fetched in one round trip (MGET) and
streamed best first: ``stream`` yields each parent as soon as it is decoded, ``invoke`` returns
the list. Scores travel in metadata: ``score``, ``max_similarity``, ``child_hits``.

How many children: ``k_children`` if set, else the logistic k(x) of the configured context
window (retrievers/k_sizing.py). With ``page_expansion`` > 0, the parents on the pages around each
hit (±``page_expansion`` pages; the graph passes page_expansion_pages, 1 by default) follow
the hits; they carry ``expanded_from`` and their hit's scores.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManager, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from pydantic import ConfigDict

from keel.core.settings import RetrievalWindowSettings
from keel.core.text import exact_terms
from keel.retrievers.k_sizing import k_for_config
from keel.stores.chunk_index import PARENT_FIELDS
from keel.stores.tag_filters import validate_tag_id


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


class KeelParentRetriever(BaseRetriever):
    """The user's parent chunks for a query. ``store`` is a ``keel.stores.chunk_store.RedisChunkStore``.

    Not LangChain's ParentDocumentRetriever (a docstore of parents beside any vector store): the
    parents live in Keel's own Redis index, are scored by their children and streamed best first."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    user_id: str
    conversation_id: str | None = None
    doc_ids: list[str] | None = None
    sources: list[str] | None = None
    k_children: int | None = None
    page_expansion: int = 0
    exact_term_boost: float = 0.0  # children naming the query's codes / names (ZR-200) rank this much higher

    @property
    def k(self) -> int:
        """Children per search: ``k_children``, else logistic k(x) of the store's configuration (the
        default retrieval settings when the store was given its storage settings alone)."""
        if self.k_children:
            return self.k_children
        cfg = self.store.cfg
        return k_for_config(cfg if isinstance(cfg, RetrievalWindowSettings) else RetrievalWindowSettings())

    # --- the stream -------------------------------------------------------------------------
    def iter_parents(self, query: str, query_embedding: Sequence[float] | None = None) -> Iterator[Document]:
        """Parents best first: one KNN search, one MGET, then each parent decoded as it is taken.
        ``query_embedding``: the query's vector when the caller already has it (sub-questions
        searched in several scopes are embedded once, retrievers/fanout.py). The documents whose
        parents were handed out get their TTL renewed (at most once per refresh interval)."""
        validate_tag_id("user_id", self.user_id)
        hits = self.store.search_children(
            self.store.embeddings.embed_query(query) if query_embedding is None else query_embedding,
            self.k,
            self.user_id,
            conversation_id=self.conversation_id,
            doc_ids=self.doc_ids,
            sources=self.sources,
            fields=PARENT_FIELDS,
            exact_terms=exact_terms(query) if self.exact_term_boost > 0 else (),
            exact_term_boost=self.exact_term_boost,
        )
        ranked = rank_parents(hits)
        returned: list[Document] = []
        try:
            for (parent_id, score, best, count), parent in zip(
                ranked, self.store.iter_parents([row[0] for row in ranked], user_id=self.user_id), strict=False
            ):
                if parent is None:  # expired between the search and the fetch
                    continue
                parent.metadata.update(score=score, max_similarity=best, child_hits=count, parent_id=parent_id)
                returned.append(parent)
                yield parent
        finally:
            used = [str(p.metadata["doc_id"]) for p in returned if p.metadata.get("doc_id")]
            if used and hasattr(self.store, "refresh_ttl_if_due"):
                self.store.refresh_ttl_if_due(self.user_id, used)
        if self.page_expansion > 0:
            yield from self.expand_pages(returned, self.page_expansion)

    def expand_pages(self, parents: Sequence[Document], radius: int | None = None) -> list[Document]:
        """The parents on the pages within ``radius`` of each given parent's page (same document),
        not already among ``parents``; in the order of the hit they belong to, then page order.
        Each carries ``expanded_from`` (the hit's parent id) and the hit's scores."""
        radius = self.page_expansion if radius is None else radius
        anchors: dict[tuple[str, int], Document] = {}
        for parent in parents:
            meta = parent.metadata
            if meta.get("doc_id") and meta.get("page"):
                anchors.setdefault((meta["doc_id"], int(meta["page"])), parent)
        if radius <= 0 or not anchors:
            return []
        have = {p.id or p.metadata.get("parent_id") for p in parents}
        found = [row for row in self.store.neighbour_parent_ids(self.user_id, list(anchors), radius) if row[0] not in have]
        if not found:
            return []
        fetched = {p.id: p for p in self.store.get_parents([row[0] for row in found], user_id=self.user_id)}
        rank = {key: i for i, key in enumerate(anchors)}
        expanded = []
        for parent_id, doc_id, page in found:
            neighbour = fetched.get(parent_id)
            if neighbour is None:
                continue
            # the hit it belongs to: the best-ranked anchor of the same document within the radius
            owner_key = min(
                (key for key in anchors if key[0] == doc_id and abs(key[1] - page) <= radius),
                key=lambda key: rank[key],
            )
            owner = anchors[owner_key].metadata
            neighbour.metadata.update(
                score=owner.get("score", 0.0),
                max_similarity=owner.get("max_similarity", 0.0),
                child_hits=0,
                parent_id=parent_id,
                expanded_from=owner.get("parent_id"),
            )
            expanded.append((rank[owner_key], page, neighbour))
        expanded.sort(key=lambda row: (row[0], row[1]))
        return [row[2] for row in expanded]

    # --- the LangChain interface ------------------------------------------------------------
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> list[Document]:
        return list(self.iter_parents(query, query_embedding))

    def stream(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[list[Document]]:
        """Yield ``[parent]`` one at a time, best first (chunks add up to ``invoke``'s list),
        with the same retriever callbacks as ``invoke``."""
        config = ensure_config(config)
        callback_manager = CallbackManager.configure(
            config.get("callbacks"),
            None,
            inheritable_tags=config.get("tags"),
            local_tags=self.tags,
            inheritable_metadata={**(config.get("metadata") or {}), **self._get_ls_params(**kwargs)},
            local_metadata=self.metadata,
        )
        run_manager = callback_manager.on_retriever_start(None, input, name=config.get("run_name") or self.get_name())
        streamed: list[Document] = []
        try:
            for parent in self.iter_parents(input):
                streamed.append(parent)
                yield [parent]
        except GeneratorExit:  # the consumer stopped early: what it took is the result
            run_manager.on_retriever_end(streamed)
            raise
        except Exception as exc:
            run_manager.on_retriever_error(exc)
            raise
        run_manager.on_retriever_end(streamed)
