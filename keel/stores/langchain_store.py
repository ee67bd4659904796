"""Keel's chunk store as a LangChain ``VectorStore``, for users' own chains.

One instance speaks for one user (and optionally one conversation): every search is filtered by
that user's uuid, whatever the ``filter`` says, and every document added belongs to that user.

* ``add_documents``: documents that share ``metadata["doc_id"]`` form one Keel document (a
  document without one is its own); each Document is stored as a child chunk that is its own
  parent. Adding under an existing doc_id replaces that document (Keel's re-ingest rule).
  Returned ids start with the user's key (ids given are prefixed with it), so one user's ids
  can never name, and overwrite, another user's chunks.
  For real parent-child chunking, ingest through ``keel.loaders.pipeline.ingest`` instead.
* ``similarity_search_with_score``: (child, cosine similarity), best first. ``filter`` takes
  ``doc_id``, ``source`` (a value or a list) and ``conversation_id``; values are escaped, so a
  file name with braces, pipes or quotes matches only itself.
* ``delete(ids)``: ``ids`` are the chunk ids ``add_documents`` returned; exactly those chunks go
  (a document whose last chunk goes is removed). ``delete(doc_ids=[...])`` removes whole documents.
* ``get_by_ids(ids)``: the user's chunks by the ids ``add_documents`` returned, in that order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from keel.core.settings import VectorStoreSettings
from keel.stores.chunk_store import INT_FIELDS, RedisChunkStore
from keel.stores.connections import get_redis
from keel.stores.document_catalog import text_of
from keel.stores.tag_filters import validate_tag_id

FILTER_KEYS = frozenset({"doc_id", "source", "conversation_id"})


def _as_list(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(f"filter {name!r} must be a string or a list of strings, got {value!r}")


class KeelVectorStore(VectorStore):
    """A user's view of a ``RedisChunkStore`` through LangChain's VectorStore interface."""

    def __init__(self, chunk_store: RedisChunkStore, user_id: str, conversation_id: str | None = None):
        self.chunk_store = chunk_store
        self.user_id = validate_tag_id("user_id", user_id)
        self.conversation_id = validate_tag_id("conversation_id", conversation_id) if conversation_id else None

    @property
    def embeddings(self) -> Embeddings:
        return self.chunk_store.embeddings

    # --- writing ------------------------------------------------------------------------------
    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict] | None = None, *, ids: list[str] | None = None, **kwargs: Any
    ) -> list[str]:
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        if len(metadatas) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(metadatas)} metadatas")
        return self.add_documents([Document(page_content=t, metadata=dict(m)) for t, m in zip(texts, metadatas, strict=False)], ids=ids)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Store the documents for this user; returns their chunk ids (``ids`` if given)."""
        ids = kwargs.get("ids")
        if ids is not None and len(ids) != len(documents):
            raise ValueError(f"{len(documents)} documents but {len(ids)} ids")
        groups: dict[str, list[tuple[int, Document]]] = {}
        for index, document in enumerate(documents):
            if not isinstance(document.page_content, str) or not document.page_content.strip():
                raise ValueError(f"document {index} has no text")
            owner = document.metadata.get("user_id")
            if owner not in (None, self.user_id):
                raise ValueError(f"document {index} belongs to user {owner!r}, not {self.user_id!r}")
            doc_id = document.metadata.get("doc_id") or self._doc_id_for(document)
            groups.setdefault(validate_tag_id("doc_id", str(doc_id)), []).append((index, document))
        chunk_ids: list[str] = [""] * len(documents)
        owner = self.chunk_store._user_key(self.user_id) + ":"
        for doc_id, members in groups.items():
            parents, children = [], []
            for position, (index, document) in enumerate(members):
                local = validate_tag_id("id", str(ids[index])) if ids is not None else (document.id or f"{doc_id}:{position}")
                chunk_id = local if local.startswith(owner) else owner + local  # ids live in the user's namespace
                meta = {
                    **document.metadata,
                    "user_id": self.user_id,
                    "doc_id": doc_id,
                    "conversation_id": document.metadata.get("conversation_id") or self.conversation_id,
                    "source": str(document.metadata.get("source") or "langchain"),
                    "chunk_index": position,
                }
                parent_id = f"{chunk_id}-parent"
                parents.append(Document(id=parent_id, page_content=document.page_content, metadata=meta))
                children.append(Document(id=chunk_id, page_content=document.page_content, metadata={**meta, "parent_id": parent_id}))
                chunk_ids[index] = chunk_id
            self.chunk_store.add_document(parents, children)
        return chunk_ids

    def _doc_id_for(self, document: Document) -> str:
        seed = f"{document.metadata.get('source', '')}\x00{document.page_content}".encode()
        return hashlib.sha256(seed).hexdigest()[:24]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete chunks by the ids ``add_documents`` returned, or whole documents with
        ``doc_ids=[...]``. True when every one existed (and was this user's)."""
        doc_ids = kwargs.get("doc_ids")
        if ids and doc_ids:
            raise ValueError("delete takes chunk ids or doc_ids=[...], not both")
        if doc_ids:
            return all([self.chunk_store.delete_document(self.user_id, doc_id) for doc_id in doc_ids])
        if not ids:
            raise ValueError("delete needs the chunk ids (ids=[...]) or doc_ids=[...]; it never deletes everything")
        return self._delete_chunks([validate_tag_id("id", str(i)) for i in ids])

    def _owned_chunks(self, ids: Sequence[str]) -> list[dict[str, str] | None]:
        """Each id's child hash (text fields decoded) when it is this user's chunk, else None."""
        store = self.chunk_store
        owner = store._user_key(self.user_id) + ":"
        with store.client.pipeline(transaction=False) as pipe:
            for chunk_id in ids:
                pipe.hgetall(store.child_key(chunk_id))
            rows = pipe.execute()
        found: list[dict[str, str] | None] = []
        for chunk_id, row in zip(ids, rows, strict=False):
            fields = {text_of(k): v for k, v in (row or {}).items() if text_of(k) != "embedding"}
            fields = {k: text_of(v) for k, v in fields.items()}
            ok = chunk_id.startswith(owner) and fields.get("uuid") == self.user_id
            found.append(fields if ok else None)
        return found

    def _delete_chunks(self, ids: list[str]) -> bool:
        """Remove the chunks (child and its own parent) and update their documents' manifests in
        one WATCH/MULTI/EXEC per document; a document left without children is deleted."""
        store = self.chunk_store
        rows = self._owned_chunks(ids)
        per_doc: dict[str, set[str]] = {}
        for chunk_id, fields in zip(ids, rows, strict=False):
            if fields is not None:
                per_doc.setdefault(fields["doc_id"], set()).update(
                    {store.child_key(chunk_id), store.parent_key(fields["parent_id"])})
        for doc_id, gone in per_doc.items():
            manifest_key = store._manifest_key(self.user_id, doc_id)

            def remove(pipe, manifest_key=manifest_key, gone=gone, doc_id=doc_id) -> None:
                raw = pipe.hget(manifest_key, "keys")
                keys = [k for k in (json.loads(text_of(raw)) if raw else []) if k not in gone]
                children = sum(k.startswith(store.child_prefix) for k in keys)
                pipe.multi()
                pipe.delete(*gone)
                if children:
                    pipe.hset(manifest_key, mapping={"keys": json.dumps(keys), "children": children,
                                                     "parents": len(keys) - children})
                else:
                    pipe.delete(manifest_key, *keys)
                    pipe.srem(store._user_docs_key(self.user_id), doc_id)

            store._transaction(remove, manifest_key)
        return all(row is not None for row in rows)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """This user's chunks by id, in the given order; unknown ids and other users' are skipped."""
        ids = [validate_tag_id("id", str(i)) for i in ids]
        documents = []
        for chunk_id, fields in zip(ids, self._owned_chunks(ids), strict=False):
            if fields is None:
                continue
            metadata: dict[str, Any] = {
                "user_id": fields["uuid"], "doc_id": fields.get("doc_id"), "source": fields.get("source"),
                "parent_id": fields.get("parent_id"), "conversation_id": fields.get("conversation_id") or None,
            }
            metadata.update({name: int(fields[name]) for name in INT_FIELDS if fields.get(name)})
            documents.append(Document(id=chunk_id, page_content=fields.get("text", ""), metadata=metadata))
        return documents

    # --- searching ----------------------------------------------------------------------------
    def similarity_search_by_vector_with_score(
        self, embedding: Sequence[float], k: int = 4, filter: dict[str, Any] | None = None
    ) -> list[tuple[Document, float]]:
        filter = dict(filter or {})
        unknown = set(filter) - FILTER_KEYS
        if unknown:
            raise ValueError(f"unknown filter key(s) {sorted(unknown)}; use {sorted(FILTER_KEYS)}")
        conversation = filter.get("conversation_id", self.conversation_id)
        hits = self.chunk_store.search_children(
            embedding,
            k,
            self.user_id,
            conversation_id=conversation,
            doc_ids=_as_list("doc_id", filter.get("doc_id")),
            sources=_as_list("source", filter.get("source")),
        )
        return list(hits)

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self.similarity_search_by_vector_with_score(self.embeddings.embed_query(query), k, filter)

    def similarity_search(self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any) -> list[Document]:
        return [document for document, _ in self.similarity_search_with_score(query, k, filter)]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [document for document, _ in self.similarity_search_by_vector_with_score(embedding, k, filter)]

    def _select_relevance_score_fn(self):
        return lambda similarity: similarity  # already a cosine similarity, not a distance

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        user_id: str = "default",
        client: Any = None,
        cfg: VectorStoreSettings | None = None,
        **kwargs: Any,
    ) -> KeelVectorStore:
        """A store for ``user_id`` holding ``texts``. ``client`` (a redis.Redis) defaults to the
        configured Redis (or the embedded one)."""
        cfg = cfg or VectorStoreSettings()
        if client is None:
            client = get_redis(cfg)
        store = cls(RedisChunkStore(client, embedding, cfg), user_id=user_id, conversation_id=kwargs.get("conversation_id"))
        store.add_texts(texts, metadatas, ids=ids)
        return store
