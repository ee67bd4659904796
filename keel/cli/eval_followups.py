"""``keel eval conversations`` and ``keel eval rewrites``: follow-ups measured through the user's path
(keel/evals/conversations.py), on one set file or every bundled set of a split."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from keel.cli import running
from keel.core.configuration import Configuration
from keel.evals.settings import settings_overrides

TURN_KEYS = ("answerable_correct", "abstention_rate", "confidently_wrong_rate", "leak_rate", "questions",
             "status_counts")


def add_followup_parsers(kinds) -> None:
    """`keel eval conversations` and `keel eval rewrites`: follow-up turns, answered and rewritten."""
    talk = kinds.add_parser("conversations", help="ask each conversation of a set turn by turn, as `keel ask "
                                                  "--conversation ID` does; later turns scored on their own")
    _set_choice(talk)
    talk.add_argument("--json", action="store_true", help="print one JSON object")
    talk.add_argument("--report", type=Path, default=None, help="write JSON and PNG plots here")
    talk.add_argument("--set", dest="settings", action="append", default=[], metavar="FIELD=VALUE",
                      help="a Configuration field for this run (to measure what a setting does); repeatable")
    talk.set_defaults(handler=run_conversations)

    rewrites = kinds.add_parser("rewrites", help="each later turn's standalone rewrite against the set's, "
                                                 "without search or answer (seconds)")
    _set_choice(rewrites)
    rewrites.add_argument("--mode", choices=("model", "rules"), default="model")
    rewrites.add_argument("--json", action="store_true", help="print one JSON object, every rewrite included")
    rewrites.set_defaults(handler=run_rewrites)


def run_config_with(overrides: dict):
    """`keel ask`'s run configuration of a question, plus this eval's --set values."""
    def run_config(cfg: Configuration, conversation: str) -> dict:
        config = running.run_config(cfg, conversation)
        return {**config, "configurable": {**config["configurable"], **overrides}}

    return run_config


def _set_choice(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, nargs="?", default=None, help="a set file (default: --split's sets)")
    parser.add_argument("--split", choices=("tune", "choose", "report"), default=None,
                        help="every bundled set of this split (keel/evals/sets)")


def _sets(args: argparse.Namespace):
    """The chosen sets, loaded; a QASetError names the file and the problem."""
    from keel.evals import qa

    if (args.file is None) == (args.split is None):
        raise qa.QASetError("give a set file or --split, one of the two")
    files = [args.file] if args.file else qa.bundled_sets(args.split)
    return [qa.load_qa_set(path) for path in files]


def run_conversations(args: argparse.Namespace) -> int:
    """`keel eval conversations`: each conversation asked turn by turn, later turns scored on their own."""
    from keel.evals import conversations, qa
    from keel.evals.report import write_report

    try:
        sets = _sets(args)
        empty = [s.name for s in sets if not s.conversations]
        if empty:
            raise qa.QASetError(f"no conversations in: {', '.join(empty)}")
    except qa.QASetError as error:
        print(f"keel: error: {error}", file=sys.stderr)
        return 2
    overrides = settings_overrides(args.settings)
    summaries = {}
    for qa_set in sets:
        cfg = Configuration(**{"grounding_mode": "strict", **overrides, "user_id": f"eval-{uuid.uuid4().hex[:10]}"})

        result = conversations.run(
            qa_set, cfg, running.graph_with_history(cfg),
            ingest=lambda paths, cfg=cfg: running.ingest_paths(paths, cfg, None, progress=not args.json),
            run_config=run_config_with(overrides), progress=not args.json,
        )
        if args.report:
            for path in write_report(result, args.report, f"conversations-{qa_set.path.parent.name}"):
                print(f"wrote {path}", file=sys.stderr)
        summaries[qa_set.name] = {"all_turns": {k: result[k] for k in TURN_KEYS},
                                  "later_turns": {k: result["later_turns"][k] for k in TURN_KEYS}}
    _print(summaries, args.json)
    return 0


def run_rewrites(args: argparse.Namespace) -> int:
    """`keel eval rewrites`: the follow-up rewrites alone, against the sets' standalone questions."""
    from keel.chains.condense import condense_question
    from keel.components import Components
    from keel.evals import conversations, qa

    try:
        sets = _sets(args)
    except qa.QASetError as error:
        print(f"keel: error: {error}", file=sys.stderr)
        return 2
    cfg = Configuration()
    components = Components()
    similarity = components.similarity(cfg)

    def rewrite(question: str, history: list, previous: str) -> str:
        return condense_question(question, history, previous, mode=args.mode, model=lambda: components.chat(cfg),
                                 similarity=similarity, max_tokens=cfg.followup_rewrite_max_tokens).question

    results = {s.name: conversations.rewrite_scores(s.conversations, rewrite) for s in sets}
    if not args.json:
        for result in results.values():
            result.pop("rows")
    _print(results, args.json)
    return 0


def _print(summary: dict, as_json: bool) -> None:
    print(json.dumps(summary, ensure_ascii=False) if as_json else json.dumps(summary, ensure_ascii=False, indent=2))
