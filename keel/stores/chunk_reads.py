"""Non-KNN reads over a user's children: the pages around a hit (page expansion) and the stored
vectors of given parents' children (the follow-up relevance check).

A mixin of ``RedisChunkStore`` (it uses the store's client, index name, cfg and ensure_index):
kept apart so the store itself stays about writing chunks and the KNN search. Both read every
page of their query (``all_pages``): nothing is silently capped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from redis.commands.search.query import Query

from keel.core.settings.storage import StorageSettings
from keel.stores.chunk_queries import EmptyFilter, all_pages, filter_clause, neighbour_query


class ChunkReads:
    """Needs ``client``, ``cfg``, ``index_name`` and ``ensure_index()``."""

    cfg: StorageSettings

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
        for raw in all_pages(self.client.ft(self.index_name), query, self.cfg.search_page_size):
            fields = vars(raw)
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
            clause = filter_clause(user_id, parent_ids=list(dict.fromkeys(parent_ids)))
        except EmptyFilter:
            return {}
        self.ensure_index()
        query = Query(clause).return_fields("uuid", "parent_id").return_field("embedding", decode_field=False).dialect(2)
        rows: dict[str, list[np.ndarray]] = {}
        for raw in all_pages(self.client.ft(self.index_name), query, self.cfg.search_page_size):
            fields = vars(raw)
            if fields.get("uuid") != user_id or not fields.get("embedding"):
                continue
            rows.setdefault(fields["parent_id"], []).append(np.frombuffer(fields["embedding"], dtype=np.float32))
        return {parent_id: np.vstack(vectors) for parent_id, vectors in rows.items()}
