"""Calibrate the map from retrieval similarity to confidence on a SQuAD 2.0 dev file.

The pre-generation check refuses to answer when the mean retrieval confidence is below
``min_confidence`` (0.6). A cosine similarity is not a probability, so Keel maps it through a
logistic curve, confidence = 1 / (1 + exp(-(slope * similarity + intercept))), fitted here by
maximum likelihood on the dev set: the label is "the retrieved passages contain a gold answer".

    .venv/bin/python -m keel.evals.calibration ../shared/data/qa/squad2-dev-normans-complexity.json [--plot out.png]

prints the fitted slope and intercept (the defaults in keel/core/configuration.py come from this run),
the confidence at a few similarities, and how the 0.6 cut-off splits the dev questions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import uuid
from pathlib import Path

import numpy as np

from keel.core.configuration import Configuration
from keel.evals.scoring import normalize
from keel.evals.squad2 import ingest_articles, load_squad, sample_questions
from keel.models.embeddings import get_embeddings
from keel.retrievers.factory import default_retriever
from keel.stores.connections import get_vector_store


@dataclasses.dataclass(frozen=True)
class SetQuestion:
    """A question of Keel's QA format read as the SQuAD questions are."""

    qid: str
    question: str
    answers: list
    impossible: bool


def is_qa_set(path: Path) -> bool:
    """Keel's QA format (keel/evals/helpdesk/README.md) rather than SQuAD 2.0."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "documents" in data and "questions" in data


def retrieved_contexts(path: Path, cfg, progress: bool = True, limit: int | None = None, seed: int = 0):
    """Each (sampled) question of a SQuAD 2.0 file, or of a set in Keel's QA format (its documents
    ingested by `keel ingest`'s pipeline), with the parents the retriever returns for it, for a fresh
    user whose documents are deleted afterwards. A generator: the store lives while it runs."""
    user = f"calibrate-{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(cfg, user_id=user)  # the caller's settings stay as they were
    embeddings = get_embeddings(cfg)
    store = get_vector_store(cfg, embeddings)
    if is_qa_set(path):
        from keel.evals.qa import load_qa_set
        from keel.loaders.pipeline import ingest

        qa_set = load_qa_set(path)
        questions = sample_questions([SetQuestion(q.qid, q.question, q.answers, not q.answerable)
                                      for q in qa_set.questions], limit, seed)
        ingest(list(qa_set.documents), store, cfg, user_id=user, progress=False)
    else:
        articles, questions = load_squad(path)
        questions = sample_questions(questions, limit, seed)
        ingest_articles([a for a in articles if a.title in {q.article for q in questions}], store, cfg, user)
    retriever = default_retriever(cfg, embeddings)
    iterator = questions
    if progress:
        from tqdm import tqdm

        iterator = tqdm(questions, desc="retrieve", unit="q", file=sys.stderr)
    try:
        for question in iterator:
            yield question, retriever.invoke(question.question)[: cfg.max_context_parents]
    finally:
        for doc in store.list_documents(user):
            store.delete_document(user, doc["doc_id"])


def retrieval_features(path: Path, cfg, progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per question: mean similarity of the retrieved parents, and whether they hold a gold answer."""
    features, labels = [], []
    for question, parents in retrieved_contexts(path, cfg, progress):
        sims = [float(p.metadata.get("max_similarity", 0.0)) for p in parents]
        text = normalize(" ".join(p.page_content for p in parents))
        holds = not question.impossible and any(normalize(a) in text for a in question.answers if normalize(a))
        features.append(sum(sims) / len(sims) if sims else 0.0)
        labels.append(1.0 if holds else 0.0)
    return np.asarray(features), np.asarray(labels)


def fit_logistic(x: np.ndarray, y: np.ndarray, steps: int = 20_000, rate: float = 0.5) -> tuple[float, float]:
    """Maximum-likelihood slope and intercept by gradient descent on the log loss (x is standardised)."""
    mean, std = float(x.mean()), float(x.std() or 1.0)
    z = (x - mean) / std
    w = b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(w * z + b)))
        w -= rate * float(((p - y) * z).mean())
        b -= rate * float((p - y).mean())
    return w / std, b - w * mean / std


def best_cut(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The similarity cut-off with the best balanced accuracy (Youden's J) between the two labels."""
    best = (0.0, -1.0)
    for cut in np.unique(x):
        kept = x >= cut
        tpr = float((kept & (y == 1)).sum()) / max(1.0, float((y == 1).sum()))
        fpr = float((kept & (y == 0)).sum()) / max(1.0, float((y == 0).sum()))
        if tpr - fpr > best[1]:
            best = (float(cut), tpr - fpr)
    return best


def operating_intercept(slope: float, cut: float, min_confidence: float) -> float:
    """The intercept that puts confidence == min_confidence exactly at ``cut``."""
    return math.log(min_confidence / (1 - min_confidence)) - slope * cut


def confidence(similarity: float, slope: float, intercept: float) -> float:
    """The logistic of a similarity: the retrieval confidence this calibration fits."""
    return 1.0 / (1.0 + math.exp(-(slope * similarity + intercept)))


def main(argv=None) -> int:
    """Fit the retrieval-confidence curve on a SQuAD file and print (and plot) it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args(argv)
    cfg = Configuration()
    x, y = retrieval_features(args.file, cfg)
    slope, probability_intercept = fit_logistic(x, y)
    cut, youden = best_cut(x, y)
    intercept = operating_intercept(slope, cut, cfg.min_confidence)
    conf = np.array([confidence(v, slope, intercept) for v in x])
    kept = conf >= cfg.min_confidence
    summary = {
        "questions": int(len(x)),
        "answer_in_retrieved": int(y.sum()),
        "slope": round(slope, 4),
        "probability_intercept": round(probability_intercept, 4),
        "best_cut_similarity": round(cut, 4),
        "youden_j": round(youden, 4),
        "intercept": round(intercept, 4),
        "probability_at_cut": round(confidence(cut, slope, probability_intercept), 4),
        "kept_with_answer": int((kept & (y == 1)).sum()),
        "kept_without_answer": int((kept & (y == 0)).sum()),
        "refused_with_answer": int((~kept & (y == 1)).sum()),
        "refused_without_answer": int((~kept & (y == 0)).sum()),
        "table": {f"{s:.2f}": round(confidence(s, slope, intercept), 3) for s in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)},
    }
    print(json.dumps(summary, indent=2))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        bins = np.linspace(x.min(), x.max(), 12)
        centers, rates = [], []
        for lo, hi in zip(bins[:-1], bins[1:], strict=False):
            mask = (x >= lo) & (x < hi)
            if mask.sum() >= 5:
                centers.append((lo + hi) / 2)
                rates.append(float(y[mask].mean()))
        grid = np.linspace(x.min(), x.max(), 100)
        ax.plot(grid, [confidence(v, slope, probability_intercept) for v in grid], label="fitted probability")
        ax.plot(grid, [confidence(v, slope, intercept) for v in grid], label="confidence (0.6 at best cut)")
        ax.scatter(centers, rates, color="#cc0000", label="observed share with answer (bins of >= 5)")
        ax.axhline(cfg.min_confidence, color="grey", linestyle="--", label="min_confidence")
        ax.set_xlabel("mean retrieval similarity (cosine)")
        ax.set_ylabel("P(retrieved passages hold the answer)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
