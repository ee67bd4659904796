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
# The same head over multilingual-e5-small's vectors, with the nearest training prompts' vote: what judges
# a question detected in another language than English (keel/models/multilingual_embeddings.py).
MULTILINGUAL_ARTEFACT_DIR = Path(__file__).parent / "safety_classifier_multilingual"
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


def neighbour_vote(vectors: np.ndarray, bank: np.ndarray, bank_labels: np.ndarray, count: int,
                   label_count: int) -> np.ndarray:
    """For each unit row of ``vectors``, the share of its ``count`` nearest rows of ``bank`` (cosine)
    carrying each label (``bank_labels`` are label rows, 0 .. label_count - 1)."""
    count = min(count, len(bank))
    # einsum, not the matrix product: OpenBLAS would wake its threads for this product, and their spinning
    # afterwards slowed the multilingual encoder's own threads (which run next) from 17 ms to 40 ms a question.
    similarity = np.einsum("ij,kj->ik", vectors.astype(np.float32), bank)
    nearest = np.argpartition(-similarity, count - 1, axis=1)[:, :count]
    votes = np.zeros((len(vectors), label_count), dtype=np.float32)
    for row, indices in enumerate(nearest):
        np.add.at(votes[row], bank_labels[indices], 1.0 / count)
    return votes


class SafetyClassifierError(RuntimeError):
    """The classifier's artefact is missing, damaged, or made for another embedding model."""


@dataclass(frozen=True)
class SafetyClassifier:
    """The offline moderation head: weights over sentence vectors and hashed words, per label. With
    ``neighbours`` (the training prompts' vectors and their labels), the head's probabilities are
    averaged with a vote of the nearest training prompts: across authors and languages a request
    often lies close to a labelled one that the linear head alone scores low."""
    labels: tuple[str, ...]  # "safe" and hazard codes, in the weights' row order
    weights: np.ndarray  # (labels, dimensions)
    bias: np.ndarray  # (labels,)
    metadata: dict[str, Any] = field(default_factory=dict)
    neighbours: np.ndarray | None = None  # (prompts, vector dimensions): unit vectors of the training prompts
    neighbour_labels: np.ndarray | None = None  # (prompts,): each one's row in ``labels``

    @property
    def neighbour_count(self) -> int:
        return int(self.metadata.get("neighbour_count", 0)) if self.neighbours is not None else 0

    @property
    def neighbour_weight(self) -> float:
        return float(self.metadata.get("neighbour_weight", 0.0)) if self.neighbour_count else 0.0

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
        sentence_vectors = vectors
        if self.word_buckets:
            if len(texts) != len(vectors):
                raise ValueError("this safety classifier reads the texts' words too: pass the texts with their vectors")
            vectors = np.hstack([vectors, float(self.metadata.get("word_weight", 1.0))
                                 * word_features(texts, self.word_buckets, self.subword_sizes)])
        logits = vectors @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        head = exp / exp.sum(axis=1, keepdims=True)
        if not self.neighbour_weight:
            return head
        return (1.0 - self.neighbour_weight) * head + self.neighbour_weight * self.neighbour_vote(sentence_vectors)

    def neighbour_vote(self, vectors: np.ndarray) -> np.ndarray:
        """Each row's share of its ``neighbour_count`` nearest training prompts per label."""
        assert self.neighbours is not None and self.neighbour_labels is not None
        return neighbour_vote(vectors, self.neighbours, self.neighbour_labels, self.neighbour_count, len(self.labels))

    def save(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        weights = directory / WEIGHTS_FILE
        neighbours = {} if self.neighbours is None else {
            "neighbours": self.neighbours.astype(np.float16), "neighbour_labels": self.neighbour_labels.astype(np.int16)}
        np.savez_compressed(weights, weights=self.weights.astype(np.float32), bias=self.bias.astype(np.float32),
                            labels=np.array(self.labels), **neighbours)
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
                    neighbours = data["neighbours"].astype(np.float32) if "neighbours" in data else None
                    neighbour_labels = data["neighbour_labels"].astype(np.int64) if "neighbours" in data else None
                metadata = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))
            except (OSError, KeyError, ValueError) as error:
                raise SafetyClassifierError(
                    f"no usable safety classifier in {directory} ({error}): write one with "
                    "python -m keel.evals.safety_training, or set moderation_backend='keywords'") from error
            if weights.shape != (len(labels), weights.shape[1]) or bias.shape != (len(labels),):
                raise SafetyClassifierError(f"the safety classifier in {directory} has inconsistent shapes")
            _loaded[key] = SafetyClassifier(labels, weights, bias, metadata, neighbours, neighbour_labels)
        return _loaded[key]
