"""How documents are kept in the Redis vector index: its name, vector algorithm (FLAT or HNSW and its
graph parameters), how long documents live, and the batch and page sizes of writes and reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class StorageSettings(CheckedSettings):
    """The vector index and the lifetime of what is stored in it."""

    index_name: str = field(
        default="user_conversations",
        metadata={"doc": "Name of the RediSearch index (and prefix of its keys) that holds every user's chunks.",
                  "min_chars": 1},
    )
    vector_algorithm: Literal["FLAT", "HNSW"] = field(
        default="FLAT",
        metadata={"doc": "FLAT: exact search over every vector (fine up to ~1M chunks); HNSW: approximate graph "
                  "search, faster on large indexes. Chosen when the index is created."},
    )
    hnsw_m: int = field(
        default=16, metadata={"doc": "HNSW M (edges per node) when vector_algorithm is HNSW.", **AT_LEAST_ONE}
    )
    hnsw_ef_construction: int = field(
        default=200,
        metadata={"doc": "HNSW EF_CONSTRUCTION: candidates kept while the graph is built (better recall, slower "
                  "ingestion).", **AT_LEAST_ONE},
    )
    hnsw_ef_runtime: int = field(
        default=10, metadata={"doc": "HNSW EF_RUNTIME (candidates per query; recall vs speed).", **AT_LEAST_ONE}
    )
    ttl_seconds: int = field(
        default=30 * 24 * 3600,
        metadata={"doc": "Stored documents expire after this many seconds without use (30 days); 0 = never.",
                  **NON_NEGATIVE},
    )
    ttl_refresh_interval_seconds: int = field(
        default=3600,
        metadata={"doc": "Retrieving a document renews its TTL (ttl_seconds) at most this often per process, in "
                  "seconds; 0 = every time.", **NON_NEGATIVE},
    )
    store_transaction_retries: int = field(
        default=5, metadata={"doc": "WATCH/MULTI/EXEC attempts when concurrent writers touch the same document.",
                             **AT_LEAST_ONE}
    )
    search_page_size: int = field(
        default=1000, metadata={"doc": "Rows per page of non-KNN searches (page expansion, follow-up checks); all "
                                "pages are read.", **AT_LEAST_ONE}
    )
    embedding_batch_size: int = field(
        default=32, metadata={"doc": "Chunks embedded and written to Redis per batch while a document is ingested.",
                              **AT_LEAST_ONE}
    )
