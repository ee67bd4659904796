"""How documents are kept in the Redis vector index: its name, vector algorithm (FLAT or HNSW and its
graph parameters), how long documents live, and the batch and page sizes of writes and reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class StorageSettings:
    """The vector index and the lifetime of what is stored in it."""

    index_name: str = "user_conversations"
    vector_algorithm: Literal["FLAT", "HNSW"] = "FLAT"
    hnsw_m: int = field(default=16, metadata={"doc": "HNSW M (edges per node) when vector_algorithm is HNSW."})
    hnsw_ef_construction: int = field(default=200, metadata={"doc": "HNSW EF_CONSTRUCTION."})
    hnsw_ef_runtime: int = field(default=10, metadata={"doc": "HNSW EF_RUNTIME (candidates per query; recall vs speed)."})
    ttl_seconds: int = 30 * 24 * 3600
    ttl_refresh_interval_seconds: int = field(
        default=3600,
        metadata={"doc": "Retrieving a document renews its TTL (ttl_seconds) at most this often per process; 0 = every time."},
    )
    store_transaction_retries: int = field(
        default=5, metadata={"doc": "WATCH/MULTI/EXEC attempts when concurrent writers touch the same document."}
    )
    search_page_size: int = field(
        default=1000, metadata={"doc": "Rows per page of non-KNN searches (page expansion, follow-up checks); all pages are read."}
    )
    embedding_batch_size: int = 32
