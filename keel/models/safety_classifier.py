"""The offline safety classifier: a softmax head over the embedding model's sentence vectors that
names a hazard category (S1-S14) or ``safe``.

It runs on the vector the embedding model already makes for the question, so on a CPU it adds one
matrix product (15 x 384) to the turn, not a second model. The weights ship inside Keel
(``safety_classifier/head.npz`` beside a ``head.json`` naming the embedding model they were trained
for and the hashes of the training sets); ``keel/evals/safety_training.py`` writes them again from
the public sets.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ARTEFACT_DIR = Path(__file__).parent / "safety_classifier"
WEIGHTS_FILE = "head.npz"
METADATA_FILE = "head.json"

_lock = threading.Lock()
_loaded: dict[str, "SafetyClassifier"] = {}


class SafetyClassifierError(RuntimeError):
    """The classifier's artefact is missing, damaged, or made for another embedding model."""


@dataclass(frozen=True)
class SafetyClassifier:
    labels: tuple[str, ...]  # "safe" and hazard codes, in the weights' row order
    weights: np.ndarray  # (labels, dimensions)
    bias: np.ndarray  # (labels,)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def dimensions(self) -> int:
        return int(self.weights.shape[1])

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """Each row's probability per label (rows of ``vectors`` are unit sentence vectors)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vectors.shape[1] != self.dimensions:
            raise SafetyClassifierError(
                f"the safety classifier expects {self.dimensions}-dimensional vectors from "
                f"{self.metadata.get('embedding_model', 'its embedding model')}, got {vectors.shape[1]}: "
                "train it for this embedding model (python -m keel.evals.safety_training) or choose "
                "moderation_backend='llama_guard' or 'keywords'")
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
