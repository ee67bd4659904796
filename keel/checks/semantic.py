"""Embedding similarity for the answer checks, with a per-text vector cache.

Pure: the caller hands in the embedding function (the same model as retrieval), so the checks
run the same with the real model and with test fakes. The cache matters: the same context
sentences are compared on every attempt and every continuation, and validation must stay a
small fraction of generation time.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from keel.core.settings.quality import QualitySettings

Embed = Callable[[list[str]], list[list[float]]]
WORD = re.compile(r"\w+", re.UNICODE)

_vector_caches: dict[int, tuple[object, OrderedDict]] = {}
_caches_lock = threading.Lock()


class Semantic:
    """Cosine similarities between texts. ``seconds`` is the time spent embedding."""

    def __init__(self, embed: Embed, cache: OrderedDict[str, np.ndarray] | None = None,
                 max_cache: int = QualitySettings.embedding_cache_size):
        self._embed = embed
        self._cache = cache if cache is not None else OrderedDict()
        self._max_cache = max_cache
        self._lock = threading.Lock()
        self.seconds = 0.0

    def vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            started = time.perf_counter()
            computed = self._embed(missing)
            self.seconds += time.perf_counter() - started
            with self._lock:
                for text, vector in zip(missing, computed, strict=False):
                    array = np.asarray(vector, dtype=np.float32)
                    norm = float(np.linalg.norm(array)) or 1.0
                    self._cache[text] = array / norm
                while len(self._cache) > self._max_cache:
                    self._cache.popitem(last=False)
        return [self._cache[t] if t in self._cache else self._unit(t) for t in texts]

    def _unit(self, text: str) -> np.ndarray:  # evicted between the fill and the read: embed again
        array = np.asarray(self._embed([text])[0], dtype=np.float32)
        return array / (float(np.linalg.norm(array)) or 1.0)

    def similarities(self, text: str, others: Sequence[str]) -> list[float]:
        if not others:
            return []
        vectors = self.vectors([text, *others])
        return [float(np.dot(vectors[0], v)) for v in vectors[1:]]

    def similarity(self, a: str, b: str) -> float:
        return self.similarities(a, [b])[0]

    def __call__(self, text: str, others: list[str]) -> list[float]:
        """The ``similarities(question, sentences)`` signature the grounding checks take."""
        return self.similarities(text, others)


def semantic_for(embeddings) -> Semantic:
    """A ``Semantic`` over ``embeddings.embed_documents`` whose vector cache lives as long as the
    embeddings object: the checks of every attempt, continuation and turn share it, so a context
    sentence is embedded once, not on every check."""
    with _caches_lock:
        owner, cache = _vector_caches.get(id(embeddings), (None, None))
        if cache is None or _referent(owner) is not embeddings:  # new, or an id reused by another object
            cache = OrderedDict()
            _vector_caches[id(embeddings)] = (_reference(embeddings), cache)
    return Semantic(embeddings.embed_documents, cache)


def _reference(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj  # cannot be weakly referenced: keep it alive with its cache


def _referent(reference):
    return reference() if reference is not None else None


def words(text: str) -> list[str]:
    """The text's words, lower-cased."""
    return [w.lower() for w in WORD.findall(text or "")]


def token_overlap(new: str, old: str) -> float:
    """Share of the new text's words that the old text already has (a duplicate needs both this
    and embedding similarity)."""
    new_words, old_words = set(words(new)), set(words(old))
    if not new_words:
        return 1.0
    return len(new_words & old_words) / len(new_words)
