"""Child chunks in a RediSearch index (a redisvl schema), parents as plain keys, one document written atomically.

Layout under the index name ``N`` (cfg.index_name, ``user_conversations`` by default):

* ``N:child:<child_id>``  HASH, indexed by ``N``: text, embedding (FLOAT32), uuid,
  conversation_id, source, doc_id, parent_id (TAG), page (NUMERIC), and the rest of the metadata;
* ``N:parent:<parent_id>`` a JSON string: the parent's text and metadata (not indexed);
* ``N:doc:<user_key>:<doc_id>`` HASH manifest: source, pages, counts and the keys written, so a
  re-ingest or delete removes exactly the old chunks;
* ``N:docs:<user_key>`` SET of the user's doc ids (``list_documents``, in keel/stores/document_catalog.py).

On a Redis Cluster the user's key in each name is a hash tag, ``{<user_key>}``, so one document's
keys share a slot and its write stays one transaction (keel/stores/key_layout.py); on a single
Redis the names above are unchanged.

Every key gets cfg.ttl_seconds (30 days by default; ``refresh_ttl`` renews a user's documents).
Every search is filtered by the user's uuid (keel/stores/chunk_queries.py builds the redisvl
queries; keel/stores/chunk_index.py declares the index).
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
from redisvl.index import SearchIndex
from redisvl.query import CountQuery
from redisvl.schema import IndexSchema

from keel.core.settings.storage import StorageSettings
from keel.stores.chunk_index import (
    INT_FIELDS,
    RETURN_FIELDS,
    child_index_schema,
    create_child_index,
    redis_errors,
)
from keel.stores.chunk_queries import (
    DISTANCE_FIELD,
    EmptyFilter,
    child_filter,
    knn_query,
    phrase_filter,
)
from keel.stores.chunk_reads import ChunkReads
from keel.stores.document_catalog import DocumentCatalog
from keel.stores.document_catalog import text_of as _text
from keel.stores.key_layout import (
    is_cluster,
    require_search_coordinator,
    slot_tag,
    tagged_id,
    untagged_id,
)
from keel.stores.tag_filters import clean_tag_text, validate_tag_id

_USER_KEY_HEX_CHARS = 16


# Child metadata key: text to embed instead of page_content (never stored, never shown).
EMBEDDING_TEXT_KEY = "embedding_text"

class DocumentWriteError(RuntimeError):
    """A document's write failed inside Redis's EXEC (Redis does not roll back) and was undone."""


class RedisChunkStore(DocumentCatalog, ChunkReads):
    """The chunk store (children indexed, parents as keys): the index and its queries are redisvl's,
    on the store's own ``client`` (a ``redis.Redis``), which also writes the chunks."""

    def __init__(self, client: redis.Redis, embeddings: Embeddings, cfg: StorageSettings | None = None):
        self.client = client
        self.embeddings = embeddings
        self.cfg = cfg or StorageSettings()
        self.index_name = self.cfg.index_name
        self.child_prefix = f"{self.index_name}:child:"
        self.parent_prefix = f"{self.index_name}:parent:"
        self.slot_tags = is_cluster(client)  # a cluster's keys carry the user's hash tag
        self._dim: int | None = None
        self._search_index: SearchIndex | None = None
        self._index_ready = False

    # --- keys ---------------------------------------------------------------------------------
    def _user_key(self, user_id: str) -> str:
        """The fixed-width hash of a user id that prefixes their chunk ids and keys."""
        return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:_USER_KEY_HEX_CHARS]

    def _user_slot(self, user_id: str) -> str:
        """The user's part of their key names: the user key, as a hash tag on a cluster."""
        user_key = self._user_key(user_id)
        return slot_tag(user_key) if self.slot_tags else user_key

    def _manifest_key(self, user_id: str, doc_id: str) -> str:
        return f"{self.index_name}:doc:{self._user_slot(user_id)}:{doc_id}"

    def _user_docs_key(self, user_id: str) -> str:
        return f"{self.index_name}:docs:{self._user_slot(user_id)}"

    def child_key(self, chunk_id: str) -> str:
        return self.child_prefix + (tagged_id(chunk_id) if self.slot_tags else chunk_id)

    def parent_key(self, parent_id: str) -> str:
        return self.parent_prefix + (tagged_id(parent_id) if self.slot_tags else parent_id)

    def chunk_id_of(self, child_key: str) -> str:
        """The chunk id a child key names (either layout)."""
        return untagged_id(child_key[len(self.child_prefix) :])

    # --- index --------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Embedding size, measured once from the embeddings themselves."""
        if self._dim is None:
            self._dim = len(self.embeddings.embed_query("dimension probe"))
        return self._dim

    @property
    def index_schema(self) -> IndexSchema:
        """The child index as this store declares it (cfg's algorithm, the embeddings' size)."""
        return child_index_schema(self.index_name, self.dim, self.cfg)

    @property
    def search_index(self) -> SearchIndex:
        """The redisvl index on this store's client (it never closes the client)."""
        if self._search_index is None:
            self._search_index = SearchIndex(self.index_schema, redis_client=self.client, owns_client=False)
        return self._search_index

    def ensure_index(self) -> None:
        """Create the child index if missing; refuse one built for another embedding size."""
        if self._index_ready:
            return
        create_child_index(self.search_index, self.dim)
        if self.slot_tags:  # a cluster: its search must see every shard
            require_search_coordinator(
                self.client, self.index_name, lambda owner: self.search_index.query(CountQuery(child_filter(owner)))
            )
        self._index_ready = True

    # --- writing ------------------------------------------------------------------------------
    def embed_texts(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Embeddings as a float32 matrix, in batches of ``batch_size`` (default cfg.embedding_batch_size)."""
        batch = max(1, batch_size or self.cfg.embedding_batch_size)
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch):
            rows.extend(self.embeddings.embed_documents(list(texts[start : start + batch])))
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self.dim):
            raise ValueError(f"embeddings returned shape {matrix.shape}, expected ({len(texts)}, {self.dim})")
        return matrix

    def add_document(
        self, parents: Sequence[Document], children: Sequence[Document], *, batch_size: int | None = None
    ) -> int:
        """Store one document's chunks, replacing any earlier copy of the same (user, doc_id).

        Embeddings are computed first (``batch_size``: the ingest run's; default cfg's); the old
        chunks are deleted and the new ones written in one MULTI/EXEC. Redis does not roll back a
        command that fails inside EXEC, so the old copy is DUMPed first and restored then (and the
        new keys removed): a failure leaves the earlier copy whole, or nothing. Returns children written.
        """
        if not parents or not children:
            raise ValueError("add_document needs at least one parent and one child chunk")
        user_id, doc_id = self._owner_of([*parents, *children])
        parent_ids = {parent.id for parent in parents}
        owner_prefix = self._user_key(user_id) + ":"
        for chunk in [*parents, *children]:
            # keys are not per user, so an id outside the owner's namespace could overwrite
            # another user's chunk: refuse it (the splitter's ids always start with this prefix)
            if not str(chunk.id or "").startswith(owner_prefix):
                raise ValueError(
                    f"chunk id {chunk.id!r} must start with its owner's user key {owner_prefix!r} "
                    "(keel.splitters.parent_child.parent_chunk_id makes such ids)"
                )
        for child in children:
            if not child.id or child.metadata.get("parent_id") not in parent_ids:
                raise ValueError(f"child chunk {child.id!r} has no id or no parent among the given parents")
        self.ensure_index()
        # A splitter may ask for different text to be embedded than shown (importance hints).
        vectors = self.embed_texts(
            [child.metadata.get(EMBEDDING_TEXT_KEY) or child.page_content for child in children], batch_size
        )

        ttl = self.cfg.ttl_seconds if self.cfg.ttl_seconds and self.cfg.ttl_seconds > 0 else None
        child_keys = [self.child_key(child.id) for child in children]
        parent_keys = [self.parent_key(parent.id) for parent in parents]
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

        backup: list[tuple[str, Any, int]] = []

        def write(pipe: redis.client.Pipeline) -> None:
            old_keys = self._manifest_keys(pipe, manifest_key)
            backup[:] = self._snapshot([manifest_key, *old_keys]) if old_keys else []
            pipe.multi()
            # new keys too: a stray key of another type would make HSET fail inside EXEC
            pipe.delete(*dict.fromkeys([*old_keys, *child_keys, *parent_keys]))
            for key, child, vector in zip(child_keys, children, vectors, strict=False):
                pipe.hset(key, mapping=self._child_mapping(child, vector))
                if ttl:
                    pipe.expire(key, ttl)
            for key, parent in zip(parent_keys, parents, strict=False):
                payload = json.dumps({"id": parent.id, "page_content": parent.page_content, "metadata": parent.metadata})
                pipe.set(key, payload, ex=ttl)
            pipe.hset(manifest_key, mapping=manifest)
            pipe.sadd(user_docs_key, doc_id)
            if ttl:
                pipe.expire(manifest_key, ttl)
                pipe.expire(user_docs_key, ttl)

        def undo() -> None:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.delete(manifest_key, *child_keys, *parent_keys)
                for key, dumped, pttl in backup:
                    pipe.restore(key, max(pttl, 0), dumped, replace=True)
                if not backup:
                    pipe.srem(user_docs_key, doc_id)
                pipe.execute()

        self._transaction(write, manifest_key, undo, f"document {doc_id} ({manifest['source']})")
        return len(children)

    def _snapshot(self, keys: Sequence[str]) -> list[tuple[str, Any, int]]:
        """(key, DUMP, PTTL) of the existing ``keys``, in one round trip."""
        with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.dump(key)
                pipe.pttl(key)
            replies = pipe.execute()
        return [(key, dumped, pttl) for key, dumped, pttl in zip(keys, replies[::2], replies[1::2], strict=False) if dumped is not None]

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

    def _transaction(self, body, watched_key: str, undo=None, what: str = "") -> None:
        """Run ``body`` in WATCH/MULTI/EXEC, retrying when a concurrent writer touched the doc.
        A command that fails inside EXEC (the others still apply) runs ``undo`` and raises."""
        attempts = max(1, self.cfg.store_transaction_retries)
        for attempt in range(attempts):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(watched_key)
                    body(pipe)
                    replies = pipe.execute(raise_on_error=False)
                except redis.WatchError:
                    if attempt == attempts - 1:
                        raise
                    continue
            failed = [reply for reply in replies if isinstance(reply, Exception)]
            if failed:
                if undo is not None:
                    undo()
                raise DocumentWriteError(f"writing {what or watched_key} failed in Redis and was undone: {failed[0]}")
            return

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
        sources: Sequence[str] | None = None,
        with_text: bool = True,
        fields: Sequence[str] | None = None,
        parent_ids: Sequence[str] | None = None,
        exact_terms: Sequence[str] = (),
        exact_term_boost: float = 0.0,
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest children of the user's documents, with cosine similarity (1 - distance).

        ``conversation_id``, ``doc_ids`` and ``sources`` (file names) narrow the search further;
        an empty list finds nothing. ``with_text=False`` leaves the children's text in Redis;
        ``fields`` names exactly what to return (the parent retriever needs only PARENT_FIELDS).

        ``exact_terms`` (names and codes of the question, "ZR-200") are also searched as text, and
        children holding one rank ``exact_term_boost`` higher than their similarity: look-alikes
        ("ZR-500") embed almost alike, so similarity alone cannot keep them apart. The similarity
        returned is always the true cosine."""
        try:
            users_children = child_filter(user_id, conversation_id, doc_ids, sources, parent_ids)
        except EmptyFilter:
            return []
        if fields is None:
            fields = RETURN_FIELDS if with_text else tuple(f for f in RETURN_FIELDS if f != "text")
        returned = tuple(dict.fromkeys(["uuid", *fields]))
        self.ensure_index()
        vector = np.asarray(query_embedding, dtype=np.float32)
        if vector.shape != (self.dim,):
            raise ValueError(f"query embedding has shape {vector.shape}, expected ({self.dim},)")
        hits = self._knn(knn_query(users_children, k, returned, vector=vector), user_id)
        if exact_terms and exact_term_boost > 0:
            try:
                named_filter = users_children & phrase_filter(exact_terms)
            except EmptyFilter:
                named = []
            else:
                named = self._knn(knn_query(named_filter, k, returned, vector=vector), user_id)
            hits = _boosted(hits, named, k, exact_term_boost)
        return hits

    def _knn(self, query, user_id: str) -> list[tuple[Document, float]]:
        """The query's children with cosine similarity (1 - the index's cosine distance)."""
        with redis_errors():
            rows = self.search_index.query(query)
        hits = []
        for fields in rows:
            document = self._child_document(fields)
            if document.metadata["user_id"] != user_id:  # defence in depth: never cross users
                continue
            hits.append((document, 1.0 - float(fields[DISTANCE_FIELD])))
        return hits

    def _child_document(self, fields: dict[str, Any]) -> Document:
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
        child_id = self.chunk_id_of(_text(fields["id"]))
        return Document(id=child_id, page_content=fields.get("text") or "", metadata=metadata)


def _boosted(
    hits: list[tuple[Document, float]], named: list[tuple[Document, float]], k: int, boost: float
) -> list[tuple[Document, float]]:
    """The ``k`` best of both searches, children that name an exact term ranked ``boost`` higher."""
    matched = {document.id for document, _ in named}
    merged = {document.id: (document, similarity) for document, similarity in [*hits, *named]}
    ranked = sorted(merged.values(), key=lambda hit: -(hit[1] + (boost if hit[0].id in matched else 0.0)))
    return ranked[:k]
