"""From retrieval similarity to confidence (below min_confidence the model is not asked at all).

A cosine similarity is not a probability. Keel maps the mean similarity of the passages it will
show the model through a logistic curve, confidence = 1 / (1 + exp(-(slope * s + intercept))).
The slope is the maximum-likelihood fit on the SQuAD 2.0 dev set of "the retrieved passages hold a
gold answer"; the intercept puts ``min_confidence`` (0.6) at the dev set's best cut-off (Youden's J).
`python -m keel.evals.calibration FILE` re-fits both and prints the table; see docs/grounding.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def retrieval_confidence(similarities: Sequence[float], slope: float, intercept: float) -> float:
    """How sure retrieval is that the passages answer: a logistic of their mean similarity."""
    if not similarities:
        return 0.0
    mean = sum(similarities) / len(similarities)
    return round(1.0 / (1.0 + math.exp(-(slope * mean + intercept))), 4)
