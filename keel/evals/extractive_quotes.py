"""What the extractive last attempt would answer to every question of a SQuAD 2.0 dev set, on the real
retriever and embeddings (no model calls): right quotes, quotes without the gold, unanswerable
questions quoted, and "I don't know", for each setting compared, counted apart for the questions of
the `keel eval squad2` sample and for the others. A setting of the quote is chosen on the questions
outside the sample and checked on it.

    .venv/bin/python -m keel.evals.extractive_quotes ../shared/data/qa/squad2-dev-normans-complexity.json \
        --variant min_uncovered_quote_similarity=0.45 --variant min_uncovered_quote_similarity=0.6 \
        [--sample 100 --sample-seed 1] [--plot out.png]

A question is counted as if every model attempt before the quote had failed; a quote the answer-fit
checks refuse counts as "I don't know" (grounding passes a verbatim quote; the quality deductions and the
pre-generation gates are not applied). Every variant reads the passages retrieved with the first one's
settings: compare settings of the quote and its checks, not of retrieval.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

from keel.chains.extractive import extractive_answer
from keel.checks.answer_fit import fit_reasons
from keel.checks.semantic import Semantic
from keel.core.configuration import Configuration
from keel.evals.calibration import retrieved_contexts
from keel.evals.settings import settings_overrides
from keel.evals.squad2 import contains_gold, load_squad, sample_questions
from keel.models.embeddings import get_embeddings

KINDS = ("right", "without_gold", "unanswerable_quoted", "abstained")


def quote_kind(question, quote: str, texts: list[str], cfg: Configuration) -> str:
    """Which of ``KINDS`` the quote is, after the answer-fit checks an attempt's answer passes."""
    if quote == cfg.fallback_answer or fit_reasons(quote, question.question, texts, cfg):
        return "abstained"
    if question.impossible:
        return "unanswerable_quoted"
    return "right" if contains_gold(quote, question.answers) else "without_gold"


def quote_outcomes(path: Path, variants: dict[str, Configuration], limit: int | None = None, seed: int = 0,
                   progress: bool = True) -> list[dict]:
    """Per (sampled) question: its id and, for each named variant, the kind of its extractive quote."""
    base = next(iter(variants.values()))
    similarity = Semantic(get_embeddings(base).embed_documents)
    rows = []
    for question, retrieved in retrieved_contexts(path, base, progress, limit, seed):
        # as the ask path does: the parents over relevance_threshold, numbered as the prompt numbers them
        parents = [p for p in retrieved if float(p.metadata.get("max_similarity", 0.0)) >= base.relevance_threshold]
        passages = [(number, p.page_content) for number, p in enumerate(parents, 1)]
        texts = [text for _, text in passages]
        kinds = {name: quote_kind(question, extractive_answer(question.question, passages, cfg, similarity), texts, cfg)
                 for name, cfg in variants.items()}
        rows.append({"qid": question.qid, "question": question.question, **kinds})
    return rows


def summarize(rows: list[dict], variants: list[str], sample: set[str]) -> dict:
    """Counts of each kind per variant, inside the sample and outside it."""
    parts = {"outside_sample": [r for r in rows if r["qid"] not in sample],
             "sample": [r for r in rows if r["qid"] in sample]}
    return {part: {name: {kind: Counter(r[name] for r in items)[kind] for kind in KINDS} for name in variants}
            for part, items in parts.items()}


def plot(summary: dict, path: Path) -> None:
    """Stacked bars of what the extractive quote answers, per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(next(iter(summary.values())))
    fields = {name.partition("=")[0] for name in names}
    one_field = len(fields) == 1 and all("=" in name and "," not in name for name in names)
    labels = [name.partition("=")[2] for name in names] if one_field else names  # the values, when one field varies
    xlabel = next(iter(fields)) if one_field else ""
    fig, axes = plt.subplots(1, len(summary), figsize=(6 * len(summary), 4.5), squeeze=False)
    for ax, (part, by_variant) in zip(axes[0], summary.items(), strict=False):
        bottom = [0] * len(names)
        for kind in KINDS:
            values = [by_variant[name][kind] for name in names]
            ax.bar(labels, values, bottom=bottom, label=kind.replace("_", " "))
            bottom = [b + v for b, v in zip(bottom, values, strict=False)]
        ax.set_title(part.replace("_", " "))
        ax.set_ylabel("questions")
        ax.set_xlabel(xlabel)
        if not one_field:
            ax.tick_params(axis="x", labelrotation=20)
    handles, kinds = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, kinds, loc="lower center", ncol=len(KINDS))
    fig.suptitle("The extractive quote on every dev question")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    """Count what the extractive quote answers for every question of a file, per settings variant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--variant", action="append", default=[], metavar="FIELD=VALUE[,FIELD=VALUE]",
                        help="settings of one variant to compare (of the quote and its checks: retrieval is the "
                             "first variant's); repeatable (none: the defaults)")
    parser.add_argument("--sample", type=int, default=100, help="the eval sample's size (keel eval squad2 --limit)")
    parser.add_argument("--sample-seed", type=int, default=1)
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        variants = {spec: dataclasses.replace(Configuration(), **settings_overrides(spec.split(","), "--variant"))
                    for spec in args.variant} or {"defaults": Configuration()}
        _, questions = load_squad(args.file)
        sample = {q.qid for q in sample_questions(questions, args.sample, args.sample_seed)}
        summary = summarize(quote_outcomes(args.file, variants), list(variants), sample)
    except ValueError as error:  # not a SQuAD 2.0 file, or a bad setting: say which, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    if args.plot:
        plot(summary, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
