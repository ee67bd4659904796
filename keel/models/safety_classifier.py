"""The offline safety classifier: a softmax head over the embedding model's sentence vectors that
names a hazard category (S1-S14) or ``safe``.

It runs on the vector the embedding model already makes for the question, plus the question's words
hashed into a few thousand buckets, so on a CPU it adds one small matrix product to the turn, not a
second model. The weights ship inside Keel
(``safety_classifier/head.npz`` beside a ``head.json`` naming the embedding model they were trained
for and the hashes of the training sets); ``keel/evals/safety_training.py`` writes them again from
the public sets.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ARTEFACT_DIR = Path(__file__).parent / "safety_classifier"
WEIGHTS_FILE = "head.npz"
METADATA_FILE = "head.json"
WORD = re.compile(r"\w+", re.UNICODE)

_lock = threading.Lock()
_loaded: dict[str, SafetyClassifier] = {}


def word_features(texts: Sequence[str], buckets: int, subword_sizes: Sequence[int] = ()) -> np.ndarray:
    """The words and word pairs of each text, hashed into ``buckets`` (CRC-32, stable across runs and
    machines), present or not, as unit rows: what the sentence vector blurs ("kill a process" vs
    "kill a person") the head can read from the words. With ``subword_sizes``, each word's letter
    n-grams of those lengths too (``<word>`` marked at its ends), so a word's other forms and its
    relatives in German, French or Spanish ("poison", "vergiften", "empoisonner") share features
    the English sentence vector does not give them."""
    rows = np.zeros((len(texts), buckets), dtype=np.float32)
    for row, text in enumerate(texts):
        words = WORD.findall(text.lower())
        tokens = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        for word in words:
            marked = f"<{word}>"
            tokens += [f"#{marked[i:i + n]}" for n in subword_sizes for i in range(len(marked) - n + 1)]
        for token in tokens:
            rows[row, zlib.crc32(token.encode("utf-8")) % buckets] = 1.0
        norm = float(np.linalg.norm(rows[row]))
        if norm:
            rows[row] /= norm
    return rows


class SafetyClassifierError(RuntimeError):
    """The classifier's artefact is missing, damaged, or made for another embedding model."""


@dataclass(frozen=True)
class SafetyClassifier:
    """The offline moderation head: weights over sentence vectors and hashed words, per label."""
    labels: tuple[str, ...]  # "safe" and hazard codes, in the weights' row order
    weights: np.ndarray  # (labels, dimensions)
    bias: np.ndarray  # (labels,)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def word_buckets(self) -> int:
        return int(self.metadata.get("word_buckets", 0))

    @property
    def subword_sizes(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.metadata.get("subword_sizes", ()))

    @property
    def dimensions(self) -> int:
        """The sentence vectors' size (the weights' other columns are the word buckets')."""
        return int(self.weights.shape[1]) - self.word_buckets

    def probabilities(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        """Each row's probability per label: rows of ``vectors`` are the unit sentence vectors of
        ``texts`` (whose words the head also reads when it was trained with word buckets)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vectors.shape[1] != self.dimensions:
            raise SafetyClassifierError(
                f"the safety classifier expects {self.dimensions}-dimensional vectors from "
                f"{self.metadata.get('embedding_model', 'its embedding model')}, got {vectors.shape[1]}: "
                "train it for this embedding model (python -m keel.evals.safety_training) or choose "
                "moderation_backend='llama_guard' or 'keywords'")
        if self.word_buckets:
            if len(texts) != len(vectors):
                raise ValueError("this safety classifier reads the texts' words too: pass the texts with their vectors")
            vectors = np.hstack([vectors, float(self.metadata.get("word_weight", 1.0))
                                 * word_features(texts, self.word_buckets, self.subword_sizes)])
        logits = vectors @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def save(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        weights = directory / WEIGHTS_FILE
        np.savez_compressed(weights, weights=self.weights.astype(np.float32), bias=self.bias.astype(np.float32),
                            labels=np.array(self.labels))
        meta = directory / METADATA_FILE
        meta.write_text(json.dumps({**self.metadata, "labels": list(self.labels)}, indent=2) + "\n", encoding="utf-8")
        return [weights, meta]


def load_safety_classifier(directory: Path | None = None) -> SafetyClassifier:
    """The classifier in ``directory`` (default: the one shipped with Keel), loaded once per process."""
    directory = Path(directory or ARTEFACT_DIR)
    key = str(directory.resolve())
    with _lock:
        if key not in _loaded:
            try:
                with np.load(directory / WEIGHTS_FILE) as data:
                    labels = tuple(str(label) for label in data["labels"])
                    weights, bias = data["weights"].astype(np.float32), data["bias"].astype(np.float32)
                metadata = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))
            except (OSError, KeyError, ValueError) as error:
                raise SafetyClassifierError(
                    f"no usable safety classifier in {directory} ({error}): write one with "
                    "python -m keel.evals.safety_training, or set moderation_backend='keywords'") from error
            if weights.shape != (len(labels), weights.shape[1]) or bias.shape != (len(labels),):
                raise SafetyClassifierError(f"the safety classifier in {directory} has inconsistent shapes")
            _loaded[key] = SafetyClassifier(labels, weights, bias, metadata)
        return _loaded[key]
