"""Non-KNN reads: the pages around a hit (page expansion), the stored vectors of given parents'
children (the follow-up relevance check) and the parents themselves by id.

A mixin of ``RedisChunkStore`` (it uses the store's client, redisvl index, cfg and ensure_index):
kept apart so the store itself stays about writing chunks and the KNN search. The index reads
read every page of their query (``all_pages``): nothing is silently capped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import numpy as np
import redis
from langchain_core.documents import Document
from redisvl.index import SearchIndex

from keel.core.settings.storage import StorageSettings
from keel.stores.chunk_index import VECTOR_FIELD, redis_errors
from keel.stores.chunk_queries import EmptyFilter, all_pages, child_vectors_query, neighbour_query
from keel.stores.document_catalog import text_of
from keel.stores.key_layout import get_many


class ChunkReads:
    """Needs ``client``, ``parent_key(id)``, ``search_index``, ``cfg`` and ``ensure_index()``."""

    cfg: StorageSettings
    client: redis.Redis
    search_index: SearchIndex

    def neighbour_parent_ids(
        self, user_id: str, anchors: Sequence[tuple[str, int]], radius: int = 1
    ) -> list[tuple[str, str, int]]:
        """(parent_id, doc_id, page) of the user's parents on pages within ``radius`` of each
        (doc_id, page) anchor, in reading order per document. One query for all anchors."""
        if radius <= 0 or not anchors:
            return []
        try:
            query = neighbour_query(user_id, anchors, radius)
        except EmptyFilter:
            return []
        self.ensure_index()
        first_child: dict[str, tuple[str, int, int]] = {}
        for fields in self._all_rows(query):
            if fields.get("uuid") != user_id or not fields.get("parent_id"):
                continue
            position = (fields["doc_id"], int(fields.get("page") or 0), int(fields.get("chunk_index") or 0))
            parent_id = fields["parent_id"]
            if parent_id not in first_child or position < first_child[parent_id]:
                first_child[parent_id] = position
        ordered = sorted(first_child.items(), key=lambda item: item[1])
        return [(parent_id, doc_id, page) for parent_id, (doc_id, page, _) in ordered]

    def child_vectors(self, user_id: str, parent_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embeddings of the user's children of each parent (a rows x dim matrix per parent id),
        in one filtered query read page by page: relevance checks without a KNN over the index."""
        try:
            query = child_vectors_query(user_id, parent_ids)
        except EmptyFilter:
            return {}
        self.ensure_index()
        rows: dict[str, list[np.ndarray]] = {}
        for fields in self._all_rows(query):
            if fields.get("uuid") != user_id or not fields.get(VECTOR_FIELD):
                continue
            rows.setdefault(fields["parent_id"], []).append(np.frombuffer(fields[VECTOR_FIELD], dtype=np.float32))
        return {parent_id: np.vstack(vectors) for parent_id, vectors in rows.items()}

    def iter_parents(self, parent_ids: Sequence[str], user_id: str | None = None) -> Iterator[Document | None]:
        """One MGET for all ``parent_ids``, then each parent decoded lazily, in the given order:
        ``None`` for an expired one, or (with ``user_id``) one that belongs to another user."""
        if not parent_ids:
            return
        for payload in get_many(self.client, [self.parent_key(parent_id) for parent_id in parent_ids]):
            if payload is None:
                yield None
                continue
            data = json.loads(text_of(payload))
            if user_id is not None and data["metadata"].get("user_id") != user_id:
                yield None
                continue
            yield Document(id=data["id"], page_content=data["page_content"], metadata=data["metadata"])

    def get_parents(self, parent_ids: Sequence[str], user_id: str | None = None) -> list[Document]:
        """Parents by id in one round trip (MGET), in the given order; expired ones are skipped.
        With ``user_id``, parents of any other user are dropped too."""
        return [parent for parent in self.iter_parents(parent_ids, user_id) if parent is not None]

    def _all_rows(self, query) -> list[dict]:
        with redis_errors():
            return all_pages(self.search_index, query, self.cfg.search_page_size)
