"""``keel eval squad2|qa|helpdesk|conversations|rewrites|halueval|subquestions|moderation``: measure answering, abstention and the grounding check.

Each command imports the evals, the graph and the models inside its handler, so that the other
``keel`` commands start without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from keel.cli import running
from keel.cli.eval_followups import add_followup_parsers, run_config_with
from keel.core.configuration import Configuration
from keel.evals.settings import settings_overrides

SUMMARY_KEYS = ("answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate", "leak_rate",
                "confidently_wrong_rate", "mean_latency_s", "mean_attempts", "questions")
QA_SUMMARY_KEYS = ("answerable", "unanswerable", "status_counts", "by_category", "checks")


def add_eval_parser(commands) -> None:
    """`keel eval` and its data sets, each with its own options."""
    evaluate = commands.add_parser("eval", help="measure Keel on a QA data set")
    kinds = evaluate.add_subparsers(dest="dataset", required=True)

    squad = kinds.add_parser("squad2", help="grounded answering and abstention on a SQuAD 2.0 file")
    squad.add_argument("file", type=Path)
    _answering_options(squad)
    squad.set_defaults(handler=run_squad2)

    qa = kinds.add_parser("qa", help="a question file of Keel's QA format (keel/evals/helpdesk/README.md), "
                                     "ingested and asked as `keel ingest` and `keel ask` do")
    qa.add_argument("file", type=Path, nargs="?", default=None, help="a set file (or --split)")
    qa.add_argument("--split", choices=("tune", "choose", "report"), default=None,
                    help="every bundled set of this split (keel/evals/sets), one summary each")
    _answering_options(qa)
    qa.set_defaults(handler=run_qa)

    helpdesk = kinds.add_parser("helpdesk", help="`keel eval qa` on the bundled help-desk set (look-alike "
                                                 "products, policies with many numbers, unanswerable questions)")
    _answering_options(helpdesk)
    for parser in (qa, helpdesk):
        parser.add_argument("--language", default="en",
                            help="ask the questions translated to this language (translations.json beside the set: "
                                 "the help-desk set has de, fr and es); documents and gold answers stay as they are")
    helpdesk.set_defaults(handler=run_qa, file=None, split=None, bundled_helpdesk=True)
    add_followup_parsers(kinds)

    halu = kinds.add_parser("halueval", help="does the grounding check catch hallucinated answers?")
    halu.add_argument("file", type=Path)
    halu.add_argument("--limit", type=int, default=None)
    halu.add_argument("--all", action="store_true", help="score all rows, not only the length-matched ones")
    halu.add_argument("--json", action="store_true", help="print one JSON object")
    halu.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    halu.set_defaults(handler=run_halueval)

    split = kinds.add_parser("subquestions", help="are a compound question's parts all found (and answered)? the "
                                                 "rules' split against a tool-calling model's (keel/evals/helpdesk/compound.json)")
    split.add_argument("--file", type=Path, default=None, help="a compound-question set; default: the bundled one")
    split.add_argument("--policy", action="append", default=[], metavar="POLICY",
                       help="rules, auto or model, each optionally :<pool model> (the model that splits and "
                            "answers); repeatable (default: rules)")
    split.add_argument("--answers", action="store_true", help="also ask each question as `keel ask` does")
    split.add_argument("--json", action="store_true", help="print one JSON object, each question's split included")
    split.set_defaults(handler=run_subquestions)

    moderation = kinds.add_parser("moderation", help="does the moderator refuse harmful requests and answer the rest? "
                                                     "(held-out split of the safety sets)")
    moderation.add_argument("--data", type=Path, default=Path("../shared/data"),
                            help="the public data folder (safety/ and qa/)")
    moderation.add_argument("--json", action="store_true", help="print one JSON object")
    moderation.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    moderation.add_argument("--set", dest="settings", action="append", default=[], metavar="FIELD=VALUE",
                            help="a Configuration field, e.g. --set moderation_backend=keywords; repeatable")
    moderation.set_defaults(handler=run_moderation)


def _answering_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=None, help="sample this many questions")
    parser.add_argument("--sample-seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="FIELD=VALUE",
                        help="a Configuration field for every question of this run, e.g. --set require_answer_type=false "
                             "(to measure what a check does); repeatable")


def _outcome_writer(report: Path | None, name: str):
    """Each outcome appended to REPORT/NAME-outcomes.jsonl as it comes, so a long run's partial
    results can be read; None without --report."""
    if not report:
        return None
    report.mkdir(parents=True, exist_ok=True)
    partial = report / f"{name}-outcomes.jsonl"
    partial.write_text("", encoding="utf-8")

    def on_outcome(outcome) -> None:
        with partial.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(outcome), ensure_ascii=False) + "\n")

    return on_outcome


def _print_summary(summary: dict, as_json: bool) -> None:
    print(json.dumps(summary, ensure_ascii=False) if as_json
          else "\n".join(f"{k:24} {v}" for k, v in summary.items()))


def _require(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"no such evaluation file: {path}")


def run_squad2(args: argparse.Namespace) -> int:
    """`keel eval squad2`: ingest a SQuAD 2.0 file's articles and score the answers and abstentions."""
    from keel.evals import squad2
    from keel.evals.report import write_report
    from keel.graph import build_graph
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store

    _require(args.file)
    overrides = settings_overrides(args.settings)
    cfg = Configuration(**{"grounding_mode": "strict", **overrides})
    store = get_vector_store(cfg, get_embeddings(cfg))
    result = squad2.run(args.file, cfg, build_graph(), store, limit=args.limit, seed=args.sample_seed,
                        progress=not args.json, on_outcome=_outcome_writer(args.report, "squad2"),
                        settings=overrides)
    summary = {k: result[k] for k in SUMMARY_KEYS}
    if args.report:
        for path in write_report(result, args.report, "squad2"):
            print(f"wrote {path}", file=sys.stderr)
    _print_summary(summary, args.json)
    return 0


def run_qa(args: argparse.Namespace) -> int:
    """Evaluate through the user's path: the documents ingested by `keel ingest`'s function for a
    fresh user, each question asked with `keel ask`'s graph and run configuration."""
    from keel.evals import qa

    try:  # a malformed file is the caller's mistake: say what is wrong, exit 2, no traceback
        if getattr(args, "bundled_helpdesk", False):
            files = [qa.BUNDLED_HELPDESK]
        elif (args.file is None) == (args.split is None):
            raise qa.QASetError("give a set file or --split, one of the two")
        else:
            files = [args.file] if args.file else qa.bundled_sets(args.split)
        sets = [qa.in_language(qa.load_qa_set(path), args.language) for path in files]
    except qa.QASetError as error:
        print(f"keel: error: {error}", file=sys.stderr)
        return 2
    if len(sets) == 1:
        _print_summary(_run_qa_set(sets[0], args, "helpdesk" if getattr(args, "bundled_helpdesk", False) else "qa"),
                       args.json)
    else:
        _print_summary({s.name: _run_qa_set(s, args, s.path.parent.name) for s in sets}, args.json)
    return 0


def _run_qa_set(qa_set, args: argparse.Namespace, name: str) -> dict:
    import uuid

    from keel.evals import qa
    from keel.evals.report import write_report

    overrides = settings_overrides(args.settings)
    cfg = Configuration(**{"grounding_mode": "strict", **overrides, "user_id": f"eval-{uuid.uuid4().hex[:10]}"})

    result = qa.run(
        qa_set, cfg, running.graph_with_history(cfg),
        ingest=lambda paths: running.ingest_paths(paths, cfg, None, progress=not args.json),
        run_config=run_config_with(overrides), limit=args.limit, seed=args.sample_seed, progress=not args.json,
        on_outcome=_outcome_writer(args.report, name),
    )
    if args.report:
        for path in write_report(result, args.report, name):
            print(f"wrote {path}", file=sys.stderr)
    return {k: result[k] for k in SUMMARY_KEYS + QA_SUMMARY_KEYS}


def run_halueval(args: argparse.Namespace) -> int:
    """`keel eval halueval`: how often the grounding check tells hallucinated answers from right ones."""
    from keel.checks.semantic import semantic_for
    from keel.evals import halueval
    from keel.evals.report import write_report
    from keel.models.embeddings import get_embeddings

    _require(args.file)
    cfg = Configuration()
    rows = halueval.load_rows(args.file)
    if not args.all:
        rows = [r for r in rows if r.length_matched]
    rows = rows[: args.limit] if args.limit else rows
    similarities = semantic_for(get_embeddings(cfg))
    result = halueval.evaluate(rows, cfg, similarities, progress=not args.json)
    if args.report:
        for path in write_report(result, args.report, "halueval"):
            print(f"wrote {path}", file=sys.stderr)
    print(json.dumps(result) if args.json else "\n".join(f"{k:22} {v}" for k, v in result.items()))
    return 0


def run_subquestions(args: argparse.Namespace) -> int:
    """`keel eval subquestions`: retrieval recall of compound questions under each split policy."""
    from keel.evals import subquestion_recall

    def asker(cfg: Configuration) -> tuple:
        return running.graph_with_history(cfg), running.run_config

    try:
        result = subquestion_recall.measure(args.file or subquestion_recall.COMPOUND_SET, args.policy or ["rules"],
                                            asker if args.answers else None, progress=not args.json)
    except (ValueError, OSError) as error:
        print(f"keel: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result) if args.json else subquestion_recall.table(result["results"]))
    return 0


def run_moderation(args: argparse.Namespace) -> int:
    """`keel eval moderation`: the moderator on the public safety sets, each source reported apart."""
    from keel.components import Components
    from keel.evals import moderation, safety_sets
    from keel.evals.safety_other_authors import load_other_authors
    from keel.evals.safety_training import nearest_category_by_description

    cfg = Configuration(**settings_overrides(args.settings))
    _require(args.data / safety_sets.ADVBENCH_FILE)
    everything = safety_sets.load_all(args.data, nearest_category_by_description(cfg, None))
    prompts = safety_sets.held_out_set(everything) + load_other_authors(p.text for p in everything)
    moderator = Components().moderation(cfg)
    moderator.check("warm-up: load the models before timing")
    answers = [pair for pair in safety_sets.load_benign_answers(args.data) if safety_sets.is_held_out(pair[1])]
    result = {"backend": cfg.moderation_backend,
              **moderation.evaluate(prompts, moderator, progress=not args.json, answers=answers)}
    if args.report:
        for path in moderation.write_plots(result, args.report):
            print(f"wrote {path}", file=sys.stderr)
    _print_summary(result, args.json)
    return 0
