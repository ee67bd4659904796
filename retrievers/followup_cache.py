"""Seed 002's session cache: the last context of each conversation, in Redis, for follow-ups.

Keyed by (user, conversation): the key is a hash of both, so neither a user nor a conversation id
can name another's entry (no separators to forge, no characters to escape). The entry expires
after ``followup_cache_ttl_seconds`` (5 minutes, as the seed) and is rewritten after every turn
that had context. A follow-up question takes it at once (one GET) and merges what its own
retrieval finds (nodes/route_query.py).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CachedContext:
    question: str
    passages: list[dict[str, Any]]
    doc_ids: list[str] = field(default_factory=list)
    cached_at: float = 0.0


class FollowUpCache:
    """Last context per (user, conversation). ``client`` is a ``redis.Redis``."""

    def __init__(self, client, namespace: str = "keel", ttl_seconds: int = 300, max_passages: int = 8):
        if ttl_seconds <= 0:
            raise ValueError(f"the follow-up cache needs a positive TTL, got {ttl_seconds!r}")
        self.client = client
        self.namespace = namespace
        self.ttl_seconds = int(ttl_seconds)
        self.max_passages = max_passages

    def key(self, user_id: str, conversation_id: str) -> str:
        for name, value in (("user_id", user_id), ("conversation_id", conversation_id)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        digest = hashlib.sha256(json.dumps([user_id, conversation_id]).encode("utf-8")).hexdigest()
        return f"{self.namespace}:followup:{digest}"

    def get(self, user_id: str, conversation_id: str) -> CachedContext | None:
        raw = self.client.get(self.key(user_id, conversation_id))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            if data.get("user_id") != user_id or data.get("conversation_id") != conversation_id:
                return None  # defence in depth: never hand one conversation's context to another
            return CachedContext(
                question=data["question"],
                passages=list(data["passages"]),
                doc_ids=list(data.get("doc_ids", [])),
                cached_at=float(data.get("cached_at", 0.0)),
            )
        except (ValueError, KeyError, TypeError):
            return None  # an unreadable entry is a miss, not an error

    def put(
        self,
        user_id: str,
        conversation_id: str,
        question: str,
        passages: list[dict[str, Any]],
        doc_ids: list[str] | None = None,
    ) -> None:
        """Remember this turn's context (the first ``max_passages``) for ttl_seconds."""
        payload = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "question": question,
            "passages": list(passages)[: self.max_passages],
            "doc_ids": list(doc_ids or []),
            "cached_at": time.time(),
        }
        self.client.set(self.key(user_id, conversation_id), json.dumps(payload), ex=self.ttl_seconds)

    def clear(self, user_id: str, conversation_id: str) -> bool:
        return bool(self.client.delete(self.key(user_id, conversation_id)))


def followup_cache_for(store, cfg) -> FollowUpCache | None:
    """The cache beside Keel's chunk store (same Redis, same index name), or None when it is off
    or there is no Keel store (a user's own retriever)."""
    if store is None or cfg.followup_cache_ttl_seconds <= 0 or not cfg.thread_id:
        return None
    return FollowUpCache(
        store.client, namespace=cfg.index_name, ttl_seconds=cfg.followup_cache_ttl_seconds,
        max_passages=max(1, cfg.max_context_parents) * 2,
    )
