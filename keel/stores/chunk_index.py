"""The child-chunk index as a redisvl schema, opened on the store's own redis-py client.

The schema is the index Keel has always created (the same field names and types, tags split at
TAG_SEPARATOR and case-sensitive, FLOAT32 cosine vectors, hashes under ``<index>:child:``), so an
index that already holds users' documents is used as it is. Chunks are still written by the
store itself (keel/stores/chunk_store.py): a document's chunks, its manifest and the removal of
its earlier copy go in one WATCH/MULTI/EXEC with an undo, which redisvl's ``load`` does not do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redisvl.exceptions import RedisSearchError
from redisvl.index import SearchIndex
from redisvl.redis.connection import convert_index_info_to_schema
from redisvl.schema import IndexSchema

from keel.core.settings.storage import StorageSettings
from keel.stores.tag_filters import TAG_SEPARATOR

TAG_FIELDS = ("uuid", "conversation_id", "source", "doc_id", "parent_id")
INT_FIELDS = ("page", "total_pages", "chunk_index", "start_index")
RETURN_FIELDS = ("text", *TAG_FIELDS, *INT_FIELDS, "multimodal_type")
PARENT_FIELDS = ("uuid", "parent_id")  # all that grouping children by parent needs
VECTOR_FIELD = "embedding"
VECTOR_ALGORITHMS = ("FLAT", "HNSW")


class IndexSchemaError(RuntimeError):
    """The existing index was built for another embedding size."""


def child_index_schema(index_name: str, dim: int, cfg: StorageSettings) -> IndexSchema:
    """The index of child chunks: text, the embedding, the filter tags and the page number."""
    algorithm = cfg.vector_algorithm.upper()
    if algorithm not in VECTOR_ALGORITHMS:
        raise ValueError(f"vector_algorithm must be FLAT or HNSW, got {cfg.vector_algorithm!r}")
    vector = {"algorithm": algorithm.lower(), "dims": dim, "datatype": "float32", "distance_metric": "cosine"}
    if algorithm == "HNSW":
        vector.update(m=cfg.hnsw_m, ef_construction=cfg.hnsw_ef_construction, ef_runtime=cfg.hnsw_ef_runtime)
    tag = {"separator": TAG_SEPARATOR, "case_sensitive": True}
    return IndexSchema.from_dict(
        {
            "index": {"name": index_name, "prefix": f"{index_name}:child:", "storage_type": "hash"},
            "fields": [
                {"name": "text", "type": "text"},
                {"name": VECTOR_FIELD, "type": "vector", "attrs": vector},
                *({"name": name, "type": "tag", "attrs": tag} for name in TAG_FIELDS),
                {"name": "page", "type": "numeric"},
            ],
        }
    )


@contextmanager
def redis_errors() -> Iterator[None]:
    """Raise the redis-py error that redisvl wrapped in its ``RedisSearchError``.

    Callers tell "Redis is down" (``redis.ConnectionError``, ``redis.TimeoutError``: a per-file
    ingest error, a retry, the outage path) from a bad request by redis-py's types, as they did
    before the store used redisvl."""
    try:
        yield
    except RedisSearchError as error:
        cause = error.__cause__
        if isinstance(cause, redis.RedisError):
            raise cause.with_traceback(cause.__traceback__) from None
        raise


def create_child_index(index: SearchIndex, dim: int) -> None:
    """Create the index if missing; refuse an existing one built for another embedding size.
    Another process creating it at the same moment is fine."""
    with redis_errors():
        if index.exists():
            existing = indexed_dim(index.info())
            if existing is not None and existing != dim:
                raise IndexSchemaError(
                    f"RediSearch index {index.name!r} holds {existing}-dimensional vectors but the "
                    f"embedding model gives {dim}; use another index_name or drop the index"
                )
            return
        try:
            index.create(overwrite=False)
        except RedisSearchError as error:
            if "already exists" not in str(error).lower():
                raise


def indexed_dim(info: dict) -> int | None:
    """The vector size of a live index, from its FT.INFO read back as a redisvl schema."""
    fields = convert_index_info_to_schema(info).get("fields", [])
    for field in fields:
        if field.get("name") == VECTOR_FIELD:
            dims = (field.get("attrs") or {}).get("dims")
            return int(dims) if dims is not None else None
    return None
