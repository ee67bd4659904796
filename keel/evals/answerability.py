"""How the pre-generation gates split a SQuAD 2.0 dev set (or a set in Keel's QA format): what share of unanswerable questions each
stops, and what share of answerable ones, on the real retriever and embeddings (no model calls).

    .venv/bin/python -m keel.evals.answerability ../shared/data/qa/squad2-dev-normans-complexity.json \
        [--limit N] [--sample-seed S] [--plot out.png]

"with evidence" counts the answerable questions whose evidence sentences (the ones the extractive
answer would quote) contain a gold answer: stopping those costs correct answers; stopping the others
mostly costs answers that were wrong anyway. The defaults of keel/core/configuration.py's evidence
checks (require_evidence, evidence_sentences, the negation patterns) come from this report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from keel.checks.answer_topic import topic_relevance
from keel.checks.answerability import evidence_gaps, evidence_sentences, too_unsure
from keel.checks.confidence import retrieval_confidence
from keel.checks.grounding import question_terms_missing
from keel.checks.semantic import Semantic
from keel.core.configuration import Configuration
from keel.evals.calibration import retrieved_contexts
from keel.evals.squad2 import contains_gold
from keel.models.embeddings import get_embeddings

GROUPS = ("unanswerable", "answerable", "answerable_with_evidence")


def gate_outcomes(path: Path, cfg, limit: int | None = None, seed: int = 0, progress: bool = True) -> list[dict]:
    """Per question: its group flags and the reason codes of each pre-generation gate that stops it."""
    similarities = Semantic(get_embeddings(cfg).embed_documents)
    rows = []
    for question, retrieved in retrieved_contexts(path, cfg, progress, limit, seed):
        # as the ask path does: routing keeps the parents over relevance_threshold, the gates read those
        parents = [p for p in retrieved if float(p.metadata.get("max_similarity", 0.0)) >= cfg.relevance_threshold]
        passages = [(number, p.page_content) for number, p in enumerate(parents, 1)]
        sources = [str(p.metadata.get("source", "")) for p in parents]
        confidence = retrieval_confidence([float(p.metadata["max_similarity"]) for p in parents],
                                          cfg.confidence_slope, cfg.confidence_intercept)
        relevance = topic_relevance(similarities, cfg.topic_relevance_weight)  # ranked as evidence_gaps ranks
        evidence = " ".join(s for _, s in evidence_sentences(question.question, passages, cfg.evidence_sentences,
                                                              relevance))
        rows.append({
            "qid": question.qid,
            "impossible": question.impossible,
            "with_evidence": not question.impossible and contains_gold(evidence, question.answers),
            "no_relevant_context": not parents,
            "low_confidence": bool(parents) and too_unsure(question.question, [t for _, t in passages], confidence, cfg),
            "terms_not_in_context": bool(question_terms_missing(
                question.question, [f"{s} {t}" for s, (_, t) in zip(sources, passages, strict=False)])),
            "evidence_gaps": evidence_gaps(question.question, passages, sources, cfg, similarities),
        })
    return rows


def summarize(rows: list[dict]) -> dict:
    """Share of each group stopped by each gate, by the evidence checks, and by any gate."""
    groups = {
        "unanswerable": [r for r in rows if r["impossible"]],
        "answerable": [r for r in rows if not r["impossible"]],
        "answerable_with_evidence": [r for r in rows if r["with_evidence"]],
    }
    gates = {
        "no_relevant_context": lambda r: r["no_relevant_context"],
        "low_confidence": lambda r: r["low_confidence"],
        "terms_not_in_context": lambda r: r["terms_not_in_context"],
        "evidence": lambda r: bool(r["evidence_gaps"]),
        "any": lambda r: (r["no_relevant_context"] or r["low_confidence"] or r["terms_not_in_context"]
                          or bool(r["evidence_gaps"])),
    }

    def share(items, predicate) -> float:
        return round(sum(1 for r in items if predicate(r)) / len(items), 4) if items else 0.0

    return {
        "questions": len(rows),
        "counts": {name: len(items) for name, items in groups.items()},
        "stopped": {gate: {name: share(items, test) for name, items in groups.items()} for gate, test in gates.items()},
        "evidence_reasons": {name: dict(Counter(code.split(":")[0] for r in items for code in r["evidence_gaps"]))
                             for name, items in groups.items()},
    }


def plot(summary: dict, path: Path) -> None:
    """Bar chart of what each pre-generation gate stops, answerable and unanswerable apart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    gates = list(summary["stopped"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.27
    for offset, group in enumerate(GROUPS):
        values = [summary["stopped"][gate][group] for gate in gates]
        ax.bar(np.arange(len(gates)) + (offset - 1) * width, values, width, label=group.replace("_", " "))
    ax.set_xticks(np.arange(len(gates)), gates)
    ax.set_ylabel("share of the group stopped before generation")
    ax.set_ylim(0, 1)
    ax.set_title(f"Pre-generation gates on {summary['questions']} SQuAD 2.0 dev questions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    """Run the pre-generation gates over a QA file (no model call) and print what each stops."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--sample-seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        summary = summarize(gate_outcomes(args.file, Configuration(), args.limit, args.sample_seed))
    except ValueError as error:  # not a SQuAD 2.0 file, or a bad setting: say which, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    if args.plot:
        plot(summary, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
