"""Child chunks in a RediSearch index, parents as plain keys, one document written atomically.

Layout under the index name ``N`` (cfg.index_name, seed 003's ``user_conversations``):

* ``N:child:<child_id>``  HASH, indexed by ``N``: text, embedding (FLOAT32), uuid,
  conversation_id, source, doc_id, parent_id (TAG), page (NUMERIC), and the rest of the metadata;
* ``N:parent:<parent_id>`` a JSON string: the parent's text and metadata (not indexed);
* ``N:doc:<user_key>:<doc_id>`` HASH manifest: source, pages, counts and the keys written, so a
  re-ingest or delete removes exactly the old chunks;
* ``N:docs:<user_key>`` SET of the user's doc ids (``list_documents``).

Every key gets cfg.ttl_seconds (30 days by default). Every search is filtered by the user's uuid.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import redis
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from redis.commands.search.field import NumericField, TagField, TextField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query

from graph.configuration import Configuration
from stores.tag_filters import TAG_SEPARATOR, clean_tag_text, tag_equals, tag_in, validate_tag_id

TAG_FIELDS = ("uuid", "conversation_id", "source", "doc_id", "parent_id")
INT_FIELDS = ("page", "total_pages", "chunk_index", "start_index")
RETURN_FIELDS = ("text", *TAG_FIELDS, *INT_FIELDS, "multimodal_type")
DISTANCE_FIELD = "vector_distance"
_USER_KEY_HEX_CHARS = 16
_MANIFEST_FIELDS = ("doc_id", "source", "pages", "parents", "children", "conversation_id", "ingested_at")
_TRANSACTION_RETRIES = 5


# Child metadata key: text to embed instead of page_content (never stored, never shown).
EMBEDDING_TEXT_KEY = "embedding_text"

class IndexSchemaError(RuntimeError):
    """The existing index was built for another embedding size."""


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class RedisChunkStore:
    """The chunk store of seed 003 on redis-py's search API. ``client`` is a ``redis.Redis``."""

    def __init__(self, client: redis.Redis, embeddings: Embeddings, cfg: Configuration | None = None):
        self.client = client
        self.embeddings = embeddings
        self.cfg = cfg or Configuration()
        self.index_name = self.cfg.index_name
        self.child_prefix = f"{self.index_name}:child:"
        self.parent_prefix = f"{self.index_name}:parent:"
        self._dim: int | None = None
        self._index_ready = False

    # --- keys ---------------------------------------------------------------------------------
    def _user_key(self, user_id: str) -> str:
        return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:_USER_KEY_HEX_CHARS]

    def _manifest_key(self, user_id: str, doc_id: str) -> str:
        return f"{self.index_name}:doc:{self._user_key(user_id)}:{doc_id}"

    def _user_docs_key(self, user_id: str) -> str:
        return f"{self.index_name}:docs:{self._user_key(user_id)}"

    # --- index --------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Embedding size, measured once from the embeddings themselves."""
        if self._dim is None:
            self._dim = len(self.embeddings.embed_query("dimension probe"))
        return self._dim

    def ensure_index(self) -> None:
        """Create the child index if missing; refuse one built for another embedding size."""
        if self._index_ready:
            return
        search = self.client.ft(self.index_name)
        try:
            info = search.info()
        except redis.ResponseError as exc:
            if "unknown index" not in str(exc).lower() and "no such index" not in str(exc).lower():
                raise
            try:
                search.create_index(
                    self._schema(), definition=IndexDefinition(prefix=[self.child_prefix], index_type=IndexType.HASH)
                )
            except redis.ResponseError as create_exc:  # another process created it first
                if "already exists" not in str(create_exc).lower():
                    raise
        else:
            existing = self._indexed_dim(info)
            if existing is not None and existing != self.dim:
                raise IndexSchemaError(
                    f"RediSearch index {self.index_name!r} holds {existing}-dimensional vectors but the "
                    f"embedding model gives {self.dim}; use another index_name or drop the index"
                )
        self._index_ready = True

    def _schema(self) -> list:
        algorithm = self.cfg.vector_algorithm.upper()
        return [
            TextField("text"),
            VectorField("embedding", algorithm, {"TYPE": "FLOAT32", "DIM": self.dim, "DISTANCE_METRIC": "COSINE"}),
            *(TagField(name, separator=TAG_SEPARATOR, case_sensitive=True) for name in TAG_FIELDS),
            NumericField("page"),
        ]

    @staticmethod
    def _indexed_dim(info: dict) -> int | None:
        for attribute in info.get("attributes", []):
            pairs = dict(zip(map(_text, attribute[::2]), attribute[1::2]))
            if _text(pairs.get("identifier", "")) == "embedding":
                return int(_text(pairs["dim"])) if "dim" in pairs else None
        return None

    # --- writing ------------------------------------------------------------------------------
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings as a float32 matrix, computed in batches of cfg.embedding_batch_size."""
        batch = max(1, self.cfg.embedding_batch_size)
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch):
            rows.extend(self.embeddings.embed_documents(list(texts[start : start + batch])))
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self.dim):
            raise ValueError(f"embeddings returned shape {matrix.shape}, expected ({len(texts)}, {self.dim})")
        return matrix

    def add_document(self, parents: Sequence[Document], children: Sequence[Document]) -> int:
        """Store one document's chunks, replacing any earlier copy of the same (user, doc_id).

        Embeddings are computed first; the old chunks are deleted and the new ones written in one
        MULTI/EXEC, so readers see the old document or the new one, never a mix or a half.
        Returns the number of children written.
        """
        if not parents or not children:
            raise ValueError("add_document needs at least one parent and one child chunk")
        user_id, doc_id = self._owner_of([*parents, *children])
        parent_ids = {parent.id for parent in parents}
        for child in children:
            if not child.id or child.metadata.get("parent_id") not in parent_ids:
                raise ValueError(f"child chunk {child.id!r} has no id or no parent among the given parents")
        self.ensure_index()
        # A splitter may ask for different text to be embedded than shown (importance hints).
        vectors = self.embed_texts([child.metadata.get(EMBEDDING_TEXT_KEY) or child.page_content for child in children])

        ttl = self.cfg.ttl_seconds if self.cfg.ttl_seconds and self.cfg.ttl_seconds > 0 else None
        child_keys = [self.child_prefix + child.id for child in children]
        parent_keys = [self.parent_prefix + parent.id for parent in parents]
        first = parents[0].metadata
        manifest = {
            "doc_id": doc_id,
            "source": str(first.get("source", "")),
            "pages": int(first.get("total_pages") or 1),
            "parents": len(parents),
            "children": len(children),
            "conversation_id": first.get("conversation_id") or "",
            "ingested_at": f"{time.time():.3f}",
            "keys": json.dumps([*child_keys, *parent_keys]),
        }
        manifest_key = self._manifest_key(user_id, doc_id)
        user_docs_key = self._user_docs_key(user_id)

        def write(pipe: redis.client.Pipeline) -> None:
            old_keys = self._manifest_keys(pipe, manifest_key)
            pipe.multi()
            if old_keys:
                pipe.delete(*old_keys)
            for key, child, vector in zip(child_keys, children, vectors):
                pipe.hset(key, mapping=self._child_mapping(child, vector))
                if ttl:
                    pipe.expire(key, ttl)
            for key, parent in zip(parent_keys, parents):
                payload = json.dumps({"id": parent.id, "page_content": parent.page_content, "metadata": parent.metadata})
                pipe.set(key, payload, ex=ttl)
            pipe.hset(manifest_key, mapping=manifest)
            pipe.sadd(user_docs_key, doc_id)
            if ttl:
                pipe.expire(manifest_key, ttl)
                pipe.expire(user_docs_key, ttl)

        self._transaction(write, manifest_key)
        return len(children)

    def delete_document(self, user_id: str, doc_id: str) -> bool:
        """Remove a document's chunks, parents and manifest. False when there was nothing."""
        validate_tag_id("user_id", user_id)
        validate_tag_id("doc_id", doc_id)
        manifest_key = self._manifest_key(user_id, doc_id)
        existed: list[bool] = []

        def remove(pipe: redis.client.Pipeline) -> None:
            old_keys = self._manifest_keys(pipe, manifest_key)
            existed[:] = [bool(old_keys)]
            pipe.multi()
            pipe.delete(manifest_key, *old_keys)
            pipe.srem(self._user_docs_key(user_id), doc_id)

        self._transaction(remove, manifest_key)
        return existed[0]

    def _transaction(self, body, watched_key: str) -> None:
        """Run ``body`` in WATCH/MULTI/EXEC, retrying when a concurrent writer touched the doc."""
        for attempt in range(_TRANSACTION_RETRIES):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(watched_key)
                    body(pipe)
                    pipe.execute()
                    return
                except redis.WatchError:
                    if attempt == _TRANSACTION_RETRIES - 1:
                        raise

    @staticmethod
    def _manifest_keys(pipe: redis.client.Pipeline, manifest_key: str) -> list[str]:
        raw = pipe.hget(manifest_key, "keys")
        return json.loads(_text(raw)) if raw else []

    @staticmethod
    def _owner_of(chunks: Sequence[Document]) -> tuple[str, str]:
        owners = {(chunk.metadata.get("user_id"), chunk.metadata.get("doc_id")) for chunk in chunks}
        if len(owners) != 1:
            raise ValueError(f"add_document takes the chunks of exactly one (user_id, doc_id), got {sorted(map(str, owners))}")
        user_id, doc_id = owners.pop()
        validate_tag_id("user_id", user_id)
        validate_tag_id("doc_id", doc_id)
        conversation_ids = {chunk.metadata.get("conversation_id") for chunk in chunks} - {None}
        for conversation_id in conversation_ids:
            validate_tag_id("conversation_id", conversation_id)
        return user_id, doc_id

    @staticmethod
    def _child_mapping(child: Document, vector: np.ndarray) -> dict[str, Any]:
        meta = child.metadata
        mapping: dict[str, Any] = {
            "text": child.page_content,
            "embedding": vector.astype(np.float32).tobytes(),
            "uuid": meta["user_id"],
            "source": clean_tag_text(str(meta.get("source", ""))),
            "doc_id": meta["doc_id"],
            "parent_id": meta["parent_id"],
            "multimodal_type": meta.get("multimodal_type", "text"),
        }
        if meta.get("conversation_id"):
            mapping["conversation_id"] = meta["conversation_id"]
        for name in INT_FIELDS:
            if meta.get(name) is not None:
                mapping[name] = int(meta[name])
        return mapping

    # --- reading ------------------------------------------------------------------------------
    def search_children(
        self,
        query_embedding: Sequence[float],
        k: int,
        user_id: str,
        conversation_id: str | None = None,
        doc_ids: Sequence[str] | None = None,
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest children of the user's documents, with cosine similarity (1 - distance).

        ``conversation_id`` and ``doc_ids`` narrow the search further; ``doc_ids=[]`` finds nothing.
        """
        validate_tag_id("user_id", user_id)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        clauses = [tag_equals("uuid", user_id)]
        if conversation_id is not None:
            clauses.append(tag_equals("conversation_id", validate_tag_id("conversation_id", conversation_id)))
        if doc_ids is not None:
            if not doc_ids:
                return []
            clauses.append(tag_in("doc_id", [validate_tag_id("doc_id", doc_id) for doc_id in doc_ids]))
        self.ensure_index()
        vector = np.asarray(query_embedding, dtype=np.float32)
        if vector.shape != (self.dim,):
            raise ValueError(f"query embedding has shape {vector.shape}, expected ({self.dim},)")
        query = (
            Query(f"({' '.join(clauses)})=>[KNN {k} @embedding $vec AS {DISTANCE_FIELD}]")
            .sort_by(DISTANCE_FIELD)
            .return_fields(*RETURN_FIELDS, DISTANCE_FIELD)
            .paging(0, k)
            .dialect(2)
        )
        result = self.client.ft(self.index_name).search(query, query_params={"vec": vector.tobytes()})
        hits = []
        for raw in result.docs:
            document = self._child_document(raw)
            if document.metadata["user_id"] != user_id:  # defence in depth: never cross users
                continue
            hits.append((document, 1.0 - float(getattr(raw, DISTANCE_FIELD))))
        return hits

    def _child_document(self, raw: Any) -> Document:
        fields = vars(raw)
        metadata: dict[str, Any] = {
            "user_id": fields.get("uuid"),
            "conversation_id": fields.get("conversation_id") or None,
            "source": fields.get("source"),
            "doc_id": fields.get("doc_id"),
            "parent_id": fields.get("parent_id"),
            "multimodal_type": fields.get("multimodal_type") or "text",
        }
        for name in INT_FIELDS:
            if fields.get(name) not in (None, ""):
                metadata[name] = int(fields[name])
        child_id = _text(raw.id)[len(self.child_prefix) :]
        return Document(id=child_id, page_content=fields.get("text") or "", metadata=metadata)

    def get_parents(self, parent_ids: Sequence[str], user_id: str | None = None) -> list[Document]:
        """Parents by id in one round trip (MGET), in the given order; expired ones are skipped.
        With ``user_id``, parents of any other user are dropped too."""
        if not parent_ids:
            return []
        payloads = self.client.mget([self.parent_prefix + parent_id for parent_id in parent_ids])
        parents = []
        for payload in payloads:
            if payload is None:
                continue
            data = json.loads(_text(payload))
            if user_id is not None and data["metadata"].get("user_id") != user_id:
                continue
            parents.append(Document(id=data["id"], page_content=data["page_content"], metadata=data["metadata"]))
        return parents

    def list_documents(self, user_id: str) -> list[dict[str, Any]]:
        """The user's stored documents: doc_id, source, pages, parents, children, conversation_id."""
        validate_tag_id("user_id", user_id)
        user_docs_key = self._user_docs_key(user_id)
        doc_ids = sorted(_text(doc_id) for doc_id in self.client.smembers(user_docs_key))
        if not doc_ids:
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for doc_id in doc_ids:
                pipe.hmget(self._manifest_key(user_id, doc_id), list(_MANIFEST_FIELDS))
            rows = pipe.execute()
        documents, expired = [], []
        for doc_id, row in zip(doc_ids, rows):
            if row[0] is None:
                expired.append(doc_id)
                continue
            values = dict(zip(_MANIFEST_FIELDS, (_text(value) if value is not None else "" for value in row)))
            documents.append(
                {
                    "doc_id": values["doc_id"],
                    "source": values["source"],
                    "pages": int(values["pages"] or 0),
                    "parents": int(values["parents"] or 0),
                    "children": int(values["children"] or 0),
                    "conversation_id": values["conversation_id"] or None,
                    "ingested_at": float(values["ingested_at"] or 0),
                }
            )
        if expired:
            self.client.srem(user_docs_key, *expired)
        return sorted(documents, key=lambda doc: (doc["source"], doc["doc_id"]))
