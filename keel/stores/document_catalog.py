"""What a user has stored: the document manifests, listing, conversation uploads, TTL refresh.

A mixin of ``RedisChunkStore`` (it uses the store's client, key names and cfg): kept apart so the
store itself stays about writing and searching chunks.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from keel.core.settings.storage import StorageSettings
from keel.stores.tag_filters import validate_tag_id

MANIFEST_FIELDS = ("doc_id", "source", "pages", "parents", "children", "conversation_id", "ingested_at")


# (index, user, doc) -> when this process last renewed its TTL; bounded by the documents retrieved
_LAST_REFRESH: dict[tuple[str, str, str], float] = {}
_LAST_REFRESH_LOCK = threading.Lock()


def text_of(value: Any) -> str:
    """A Redis value as text (bytes decoded as UTF-8)."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class DocumentCatalog:
    """Needs ``client``, ``cfg``, ``_manifest_key(user, doc)`` and ``_user_docs_key(user)``."""

    cfg: StorageSettings

    def refresh_ttl(self, user_id: str, doc_ids: Sequence[str] | None = None) -> int:
        """Give the user's documents (all, or ``doc_ids``) a fresh cfg.ttl_seconds: children,
        parents, manifests and the user's doc set. Returns the number of documents refreshed."""
        validate_tag_id("user_id", user_id)
        ttl = self.cfg.ttl_seconds
        if not ttl or ttl <= 0:
            return 0
        if doc_ids is None:
            doc_ids = [text_of(doc_id) for doc_id in self.client.smembers(self._user_docs_key(user_id))]
        doc_ids = [validate_tag_id("doc_id", doc_id) for doc_id in doc_ids]
        if not doc_ids:
            return 0
        manifest_keys = [self._manifest_key(user_id, doc_id) for doc_id in doc_ids]
        with self.client.pipeline(transaction=False) as pipe:
            for key in manifest_keys:
                pipe.hget(key, "keys")
            stored = pipe.execute()
        refreshed = 0
        with self.client.pipeline(transaction=False) as pipe:
            for manifest_key, raw in zip(manifest_keys, stored, strict=False):
                if raw is None:
                    continue
                refreshed += 1
                for key in [manifest_key, *json.loads(text_of(raw))]:
                    pipe.expire(key, ttl)
            pipe.expire(self._user_docs_key(user_id), ttl)
            pipe.execute()
        return refreshed

    def refresh_ttl_if_due(self, user_id: str, doc_ids: Sequence[str]) -> int:
        """Renew the TTL of retrieved documents, each at most once per cfg.ttl_refresh_interval_seconds
        in this process: a document in use never expires, and a hot one costs no round trip per
        retrieval. Returns the number of documents refreshed now."""
        interval = max(0, self.cfg.ttl_refresh_interval_seconds)
        now = time.monotonic()
        due = []
        with _LAST_REFRESH_LOCK:
            for doc_id in dict.fromkeys(doc_ids):
                key = (self.index_name, user_id, doc_id)
                last = _LAST_REFRESH.get(key)
                if last is None or now - last >= interval:
                    _LAST_REFRESH[key] = now
                    due.append(doc_id)
        return self.refresh_ttl(user_id, due) if due else 0

    def conversation_documents(self, user_id: str, conversation_id: str) -> list[str]:
        """Doc ids the user uploaded in this conversation (their chunks carry its conversation_id)."""
        validate_tag_id("conversation_id", conversation_id)
        return [doc["doc_id"] for doc in self.list_documents(user_id) if doc["conversation_id"] == conversation_id]

    def list_documents(self, user_id: str) -> list[dict[str, Any]]:
        """The user's stored documents: doc_id, source, pages, parents, children, conversation_id."""
        validate_tag_id("user_id", user_id)
        user_docs_key = self._user_docs_key(user_id)
        doc_ids = sorted(text_of(doc_id) for doc_id in self.client.smembers(user_docs_key))
        if not doc_ids:
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for doc_id in doc_ids:
                pipe.hmget(self._manifest_key(user_id, doc_id), list(MANIFEST_FIELDS))
            rows = pipe.execute()
        documents, expired = [], []
        for doc_id, row in zip(doc_ids, rows, strict=False):
            if row[0] is None:
                expired.append(doc_id)
                continue
            values = dict(zip(MANIFEST_FIELDS, (text_of(value) if value is not None else "" for value in row), strict=False))
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
