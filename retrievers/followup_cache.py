"""The session cache: the last context of each conversation, in Redis, for follow-ups.

Keyed by (user, conversation): the key is a hash of both, so neither a user nor a conversation id
can name another's entry (no separators to forge, no characters to escape). The entry expires
after ``followup_cache_ttl_seconds`` (5 minutes: long enough for a
follow-up, short enough not to serve a stale context) and is rewritten after every turn
that had context; it keeps the question's vector and each passage's parent id. Redis keeps the
expiry (the key's TTL): no process keeps anything of the cache, so a follow-up answered by another
replica of the server finds the same entry, and ``cached_at`` is only a note of when it was written.

The follow-up rule (``followup_context``): the cached context is used only for a follow-up, a
question that either has a follow-up cue (``cfg.followup_cues``: "it", "that", "what about", ...,
whole words) or whose embedding has cosine >= ``cfg.followup_similarity`` (0.5) with the cached
question's. Then each cached passage must still be relevant: its best child's cosine to the
merged question (cached question + new one) must reach ``cfg.relevance_threshold``, checked on
the children's stored vectors in one query (no KNN over the index). An unrelated question in the
same conversation never sees the cached passages.

When at least ``max_context_parents`` kept passages are relevant to the new question on its own,
the cache alone fills the answer's context and route_query skips the search ("uses it at once").
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from keel.core.settings import FollowUpSettings, RetrievalSettings

_DEFAULTS = RetrievalSettings()


@dataclass
class CachedContext:
    """What a conversation's last turn found, kept briefly so a follow-up can reuse it."""
    question: str
    passages: list[dict[str, Any]]
    doc_ids: list[str] = field(default_factory=list)
    cached_at: float = 0.0
    question_vector: list[float] | None = None
    parent_ids: list[str | None] = field(default_factory=list)


@dataclass
class FollowUpContext:
    """What a follow-up takes from the cache: relevant passages (and their parent ids), and
    whether they alone fill the context (then no search is needed)."""

    passages: list[dict[str, Any]]
    parent_ids: list[str | None]
    sufficient: bool


class FollowUpCache:
    """Last context per (user, conversation). ``client`` is a ``redis.Redis``."""

    def __init__(self, client, namespace: str = "keel", ttl_seconds: int = 300, max_passages: int | None = None):
        if ttl_seconds <= 0:
            raise ValueError(f"the follow-up cache needs a positive TTL, got {ttl_seconds!r}")
        self.client = client
        self.namespace = namespace
        self.ttl_seconds = int(ttl_seconds)
        self.max_passages = _DEFAULTS.followup_cache_max_passages if max_passages is None else max_passages

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
            passages = list(data["passages"])
            parent_ids = list(data.get("parent_ids") or [None] * len(passages))
            return CachedContext(
                question=data["question"],
                passages=passages,
                doc_ids=list(data.get("doc_ids", [])),
                cached_at=float(data.get("cached_at", 0.0)),
                question_vector=data.get("question_vector"),
                parent_ids=parent_ids if len(parent_ids) == len(passages) else [None] * len(passages),
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
        question_vector: list[float] | None = None,
        parent_ids: list[str | None] | None = None,
    ) -> None:
        """Remember this turn's context (the first ``max_passages``) for ttl_seconds."""
        kept = list(passages)[: self.max_passages]
        ids = list(parent_ids or [])[: len(kept)]
        payload = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "question": question,
            "passages": kept,
            "parent_ids": ids + [None] * (len(kept) - len(ids)),
            "doc_ids": list(doc_ids or []),
            "question_vector": [float(v) for v in question_vector] if question_vector is not None else None,
            "cached_at": time.time(),
        }
        self.client.set(self.key(user_id, conversation_id), json.dumps(payload), ex=self.ttl_seconds)

    def clear(self, user_id: str, conversation_id: str) -> bool:
        return bool(self.client.delete(self.key(user_id, conversation_id)))


def followup_cache_for(store, cfg: FollowUpSettings) -> FollowUpCache | None:
    """The cache beside Keel's chunk store (same Redis, same index name), or None when it is off
    or there is no Keel store (a user's own retriever)."""
    if store is None or cfg.followup_cache_ttl_seconds <= 0 or not cfg.thread_id:
        return None
    return FollowUpCache(
        store.client, namespace=cfg.index_name, ttl_seconds=cfg.followup_cache_ttl_seconds,
        max_passages=max(1, cfg.followup_cache_max_passages),
    )


# --- the follow-up rule ---------------------------------------------------------------------------


def has_followup_cue(question: str, cues) -> bool:
    """A cue of ``cues`` as whole words (case-insensitive, any whitespace between its words)."""
    text = " ".join(question.lower().split())
    return any(re.search(rf"(?<![\w'’]){re.escape(' '.join(cue.lower().split()))}(?![\w'’])", text) for cue in cues if cue.strip())


def _cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


def is_follow_up(question: str, question_vector, cached: CachedContext, cfg: RetrievalSettings) -> bool:
    """The documented rule: a follow-up cue, or cosine to the cached question >= followup_similarity."""
    if has_followup_cue(question, cfg.followup_cues):
        return True
    return cached.question_vector is not None and _cosine(question_vector, cached.question_vector) >= cfg.followup_similarity


def merged_question(cached: CachedContext, question: str) -> str:
    """What a follow-up means in full: the cached question, then the new one."""
    return f"{cached.question} {question}"


def best_similarities(store, user_id: str, parent_ids, vectors) -> dict[str, list[float]]:
    """Per parent id: the best child cosine to each of ``vectors`` (one query for all parents)."""
    queries = np.asarray(vectors, dtype=np.float32)
    queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    best = {}
    for parent_id, children in store.child_vectors(user_id, [p for p in parent_ids if p]).items():
        children = children / np.maximum(np.linalg.norm(children, axis=1, keepdims=True), 1e-12)
        best[parent_id] = (children @ queries.T).max(axis=0).tolist()
    return best


def followup_context(store, cfg: FollowUpSettings, cached: CachedContext, question: str, embed) -> FollowUpContext | None:
    """The cached passages a follow-up may use, or None when ``question`` is no follow-up.

    ``embed(texts)`` gives the texts' vectors (route_query's memoised batch embedding)."""
    cue = has_followup_cue(question, cfg.followup_cues)
    texts = [question, merged_question(cached, question)] if cue else [question]
    vectors = embed(texts)
    if not cue and not is_follow_up(question, vectors[0], cached, cfg):
        return None
    if len(vectors) == 1:
        vectors = [vectors[0], embed([merged_question(cached, question)])[0]]
    best = best_similarities(store, cfg.user_id, cached.parent_ids, [vectors[1], vectors[0]])
    kept, ids, alone = [], [], 0
    for passage, parent_id in zip(cached.passages, cached.parent_ids, strict=False):
        merged_score, own_score = best.get(parent_id, (0.0, 0.0)) if parent_id else (0.0, 0.0)
        if merged_score >= cfg.relevance_threshold:  # an expired or unknown parent is dropped
            kept.append(passage)
            ids.append(parent_id)
            alone += own_score >= cfg.relevance_threshold
    return FollowUpContext(kept, ids, sufficient=bool(kept) and alone >= max(1, cfg.max_context_parents))
