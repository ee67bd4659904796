"""``keel eval squad2|halueval``: measure answering, abstention and the grounding check."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def add_eval_parser(commands) -> None:
    evaluate = commands.add_parser("eval", help="measure Keel on a QA data set")
    kinds = evaluate.add_subparsers(dest="dataset", required=True)

    squad = kinds.add_parser("squad2", help="grounded answering and abstention on a SQuAD 2.0 file")
    squad.add_argument("file", type=Path)
    squad.add_argument("--limit", type=int, default=None, help="sample this many questions")
    squad.add_argument("--sample-seed", type=int, default=0)
    squad.add_argument("--json", action="store_true", help="print one JSON object")
    squad.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    squad.set_defaults(handler=run_squad2)

    halu = kinds.add_parser("halueval", help="does the grounding check catch hallucinated answers?")
    halu.add_argument("file", type=Path)
    halu.add_argument("--limit", type=int, default=None)
    halu.add_argument("--all", action="store_true", help="score all rows, not only the length-matched ones")
    halu.add_argument("--json", action="store_true", help="print one JSON object")
    halu.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    halu.set_defaults(handler=run_halueval)


def _require(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"no such evaluation file: {path}")


def run_squad2(args: argparse.Namespace) -> int:
    from evals import squad2
    from evals.report import write_report
    from graph import build_graph
    from graph.configuration import Configuration
    from models.embeddings import get_embeddings
    from stores.connections import get_vector_store

    _require(args.file)
    cfg = Configuration(grounding_mode="strict")
    store = get_vector_store(cfg, get_embeddings(cfg))
    on_outcome = None
    if args.report:  # each outcome as it comes, so a long run's partial results can be read
        args.report.mkdir(parents=True, exist_ok=True)
        partial = args.report / "squad2-outcomes.jsonl"
        partial.write_text("", encoding="utf-8")

        def on_outcome(outcome) -> None:
            with partial.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(asdict(outcome), ensure_ascii=False) + "\n")

    result = squad2.run(args.file, cfg, build_graph(), store, limit=args.limit, seed=args.sample_seed,
                        progress=not args.json, on_outcome=on_outcome)
    keys = ("answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate", "leak_rate",
            "mean_latency_s", "mean_attempts", "questions")
    summary = {k: result[k] for k in keys}
    if args.report:
        for path in write_report(result, args.report, "squad2"):
            print(f"wrote {path}", file=sys.stderr)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:24} {v}" for k, v in summary.items()))
    return 0


def run_halueval(args: argparse.Namespace) -> int:
    from evals import halueval
    from evals.report import write_report
    from graph.configuration import Configuration
    from models.embeddings import get_embeddings
    from nodes.validate_answer import question_similarities
    from nodes.components import Components

    _require(args.file)
    cfg = Configuration()
    rows = halueval.load_rows(args.file)
    if not args.all:
        rows = [r for r in rows if r.length_matched]
    rows = rows[: args.limit] if args.limit else rows
    similarities = question_similarities(Components(embeddings=get_embeddings(cfg)), cfg)
    result = halueval.evaluate(rows, cfg, similarities, progress=not args.json)
    if args.report:
        for path in write_report(result, args.report, "halueval"):
            print(f"wrote {path}", file=sys.stderr)
    print(json.dumps(result) if args.json else "\n".join(f"{k:22} {v}" for k, v in result.items()))
    return 0
