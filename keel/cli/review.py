"""``keel review list|show|approve|edit|reject``: a reviewer's work on the answers held for review.

Reads the review queue in the configured MongoDB and resumes a paused turn from its checkpoint
there, as its asker, exactly as the server's /review routes do (keel/server/review_routes.py), so a
turn paused by ``keel serve`` (or ``keel ask``) is reviewed from any machine that reaches the same
MongoDB, also after the process that paused it has gone. The reviewer named with ``--reviewer``
(default: the operating-system user) is recorded with the decision. Turns paused in LangGraph
Studio are listed with their thread; they are resumed in Studio (keel/server/studio_review.py).
"""

from __future__ import annotations

import argparse
import getpass
import json

from keel.core.configuration import Configuration


def add_review_parser(commands) -> None:
    """`keel review`: the answers held for a reviewer, listed, shown, approved, edited or rejected."""
    review = commands.add_parser("review", help="answers held for human review: list, show, approve, edit, reject")
    actions = review.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the pending items, oldest first")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    show = actions.add_parser("show", help="one item: question, draft, sources, quality, status, attempts")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print one JSON object")
    for name, text in (("approve", "show the draft to the asker"),
                       ("edit", "show your text instead of the draft"),
                       ("reject", "show the fallback answer instead (status review_rejected)")):
        action = actions.add_parser(name, help=text)
        action.add_argument("id")
        if name == "edit":
            action.add_argument("--text", required=True, help="the answer the asker gets")
        if name == "reject":
            action.add_argument("--note", default=None, help="why, kept with the review item")
        action.add_argument("--reviewer", default=None, help="who decides (default: the operating-system user)")
        action.add_argument("--json", action="store_true", help="print one JSON object")
    review.set_defaults(handler=run_review)


def run_review(args: argparse.Namespace) -> int:
    """Run one `keel review` action against the review queue."""
    # here: the other `keel` commands start without a store client or LangGraph
    from keel.server.review_routes import (
        ReviewHeldElsewhere,
        ReviewNotFound,
        resume_review,
        review_item,
        review_outcome,
    )
    from keel.server.settings_policy import deployment_settings
    from keel.stores.review_queue import PENDING, ReviewQueue

    cfg = Configuration()
    queue = ReviewQueue.from_settings(cfg, cfg)
    if args.action == "list":
        items = [review_item(record) for record in queue.pending(cfg.review_queue_listed)]
        if args.json:
            print(json.dumps({"items": items}, ensure_ascii=False, default=str))
        else:
            for item in items:
                print(f"{item['review_id']}  {item.get('user_id') or '-':16} {item.get('status') or '-':22} "
                      f"quality {float(item.get('quality') or 0):.2f}  {_one_line(item.get('question', ''))}"
                      f"{_where(item)}")
            if not items:
                print("nothing is waiting for review")
        return 0
    record = queue.get(args.id)
    if not record or record.get("state") != PENDING:
        print(f"keel: no pending review {args.id!r}")
        return 1
    if args.action == "show":
        item = review_item(record)
        print(json.dumps(item, ensure_ascii=False, default=str, indent=None if args.json else 2))
        return 0
    from keel.graph import build_graph
    from keel.stores.history import get_checkpointer

    graph = build_graph(checkpointer=get_checkpointer(cfg), review_queue=queue)
    decision = {"action": args.action, "text": getattr(args, "text", None), "note": getattr(args, "note", None)}
    reviewer = args.reviewer or getpass.getuser()
    try:
        result = resume_review(graph, queue, args.id, decision, reviewer, cfg, deployment_settings(cfg))
    except (ReviewNotFound, ReviewHeldElsewhere) as missing:
        print(f"keel: {missing}")
        return 1
    outcome = review_outcome(args.id, result, record)
    if args.json:
        print(json.dumps(outcome, ensure_ascii=False, default=str))
    else:
        print(f"{outcome['review']['state']} by {reviewer}: the asker now sees ({outcome['status']}):\n"
              f"{outcome['answer']}")
    return 0


def _where(item: dict) -> str:
    """Turns paused in LangGraph Studio are resumed there, not here: the listing says so."""
    from keel.stores.review_queue import HELD_IN_LANGGRAPH_SERVER

    if item.get("held_in") != HELD_IN_LANGGRAPH_SERVER:
        return ""
    return f"  [in LangGraph Studio, thread {item.get('thread_id')}]"


def _one_line(text: str, limit: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
