"""What the sibling rule (keel/checks/siblings.py) stops, on the real retriever, with no model calls.

For each question of a set in Keel's QA format it reads the statement an answer would rest on:
for an answerable question the best-ranked context statement holding a gold answer (stopping it
costs a right answer), for an unanswerable one the best-ranked statement holding an answer of the
asked type (what a small model quotes; stopping it saves a wrong answer).

    .venv/bin/python -m keel.evals.lookalikes keel/evals/sets/staff-handbook/questions.json [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from keel.checks.answer_checks import ranked_context_sentences
from keel.checks.answer_types import expected_answer_type, has_answer_of_type
from keel.checks.semantic import Semantic
from keel.checks.siblings import statement_about_sibling
from keel.checks.statements import statements, statements_for
from keel.core.configuration import Configuration
from keel.core.text import split_statements
from keel.evals.calibration import retrieved_contexts
from keel.evals.squad2 import contains_gold
from keel.models.embeddings import get_embeddings


def support_outcomes(path: Path, cfg, progress: bool = True) -> list[dict]:
    """Per question: the statement an answer would rest on and what the sibling rule says of it."""
    similarities = Semantic(get_embeddings(cfg).embed_documents)
    rows = []
    for question, retrieved in retrieved_contexts(path, cfg, progress):
        parents = [p for p in retrieved if float(p.metadata.get("max_similarity", 0.0)) >= cfg.relevance_threshold]
        passages = [(number, p.page_content) for number, p in enumerate(parents, 1)]
        context = statements(text for _, text in passages)
        read_as = statements_for(context)
        kinds = expected_answer_type(question.question)
        ranked = ranked_context_sentences(question.question, passages, similarities, split_statements)
        if question.impossible:  # what a model quotes: the best line of the asked type
            picks = [(n, s) for n, s in ranked if not kinds or has_answer_of_type(s, kinds)][:1]
        else:  # a right answer may rest on any line holding the gold
            picks = [(n, s) for n, s in ranked if contains_gold(s, question.answers)]
        verdicts = [[statement_about_sibling(question.question, st) for st in read_as(s)] for _, s in picks]
        verdicts = [found[0] if found and all(found) else [] for found in verdicts]  # as sentence_fits reads it
        if not verdicts:
            rows.append({"qid": question.qid, "impossible": question.impossible, "question": question.question,
                         "support": "", "stopped": [],
                         "can_fire": any(statement_about_sibling(question.question, st) for st in context)})
            continue
        stopped = verdicts[0] if all(verdicts) else []
        rows.append({"qid": question.qid, "impossible": question.impossible, "question": question.question,
                     "support": picks[0][1], "stopped": stopped,
                     "can_fire": any(statement_about_sibling(question.question, st) for st in context)})
    return rows


def write_subset(path: Path, qids: set[str], out: Path) -> None:
    """The set's file with only the given questions (and no conversations), document paths made absolute."""
    data = json.loads(path.read_text(encoding="utf-8"))
    folder = path.resolve().parent

    def absolute(name: str) -> str:
        return str(folder / name) if name else name

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**{k: v for k, v in data.items() if k != "conversations"},
                               "documents": [absolute(d) for d in data["documents"]],
                               "questions": [{**q, "source": absolute(q.get("source", ""))}
                                             for q in data["questions"] if q["id"] in qids]}, indent=1))


def summarize(rows: list[dict]) -> dict:
    """The share of answerable and unanswerable questions the sibling rule stops."""
    def share(items):
        return round(sum(1 for r in items if r["stopped"]) / len(items), 3) if items else 0.0

    answerable = [r for r in rows if not r["impossible"] and r["support"]]
    unanswerable = [r for r in rows if r["impossible"] and r["support"]]
    return {"can_fire": sum(r["can_fire"] for r in rows),"answerable": len(answerable), "answerable_stopped": share(answerable),
            "unanswerable": len(unanswerable), "unanswerable_stopped": share(unanswerable)}


def main(argv=None) -> int:
    """Run the sibling rule over QA files without a model and print what it stops."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--show", action="store_true", help="print each stopped question and its support")
    parser.add_argument("--subset", type=Path, default=None,
                        help="write here, per set, a question file of the questions whose context has a statement "
                             "about a sibling (the only ones the rule can change): `keel eval qa` it with the rule "
                             "on and with --set refuse_sibling_evidence=false")
    args = parser.parse_args(argv)
    for path in args.files:
        rows = support_outcomes(path, Configuration(), progress=False)
        print(path.parent.name, json.dumps(summarize(rows)))
        if args.subset:
            write_subset(path, {r["qid"] for r in rows if r["can_fire"]}, args.subset / f"{path.parent.name}.json")
        if args.show:
            for row in rows:
                if row["stopped"]:
                    mark = "  unans" if row["impossible"] else "! ANS "
                    print(f"{mark} {row['question']}\n        {row['stopped']} <- {row['support'][:150]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
