"""Human review inside LangGraph Studio / ``langgraph dev`` under Keel's auth (keel/server/studio_auth.py).

A turn held for review pauses in the LangGraph server's own persistence, and the graph files it in
Keel's review queue (the deployment's MongoDB) with ``held_in: langgraph_server``. The queue is what
decides here, never what a run claims:

* a reviewer (role ``reviewer`` or ``admin``) may read a thread that has a pending item: its state,
  history and the pause's payload (question, draft, sources, quality). Nothing else of another
  user's: not its runs, not a copy (reviewer keys copy no thread), not a listing (the thread's id
  comes from ``keel review list`` or ``GET /review``; "interrupted" in a listing would also name
  threads paused for other reasons). The item, and with it that access, ends when the reviewer
  decides, when the asker asks again in the thread (which discards the pause) or deletes it;
* a reviewer resumes the pause with a run that carries only ``command.resume``: the decision
  (``"approve"``, ``{"action": "edit", "text": ...}``, ``{"action": "reject", "note": ...}``),
  checked before the run is stored. It runs as the asker (the item's user id, the deployment's
  settings); the decision's ``reviewer`` is the caller's name, whatever the run said, and it is
  bound to that item's ``review_id``: a resume that waited in the thread's queue while the asker
  asked again never settles the later turn (the graph pauses again, naming the mismatch);
* anyone else's command is refused (keel/server/studio_runs.py): an asker cannot approve their own
  answer, and no run writes state or jumps past a node.

The item is marked done by the graph when the resumed turn is settled, so the same pause is resumed
once: a second decision is a 404, or, queued behind the first, finds nothing paused.

Not enforced here: a stream of the thread's runs (``GET /threads/{id}/stream``) that a reviewer
opened while the turn waited is checked once, when it is joined, and LangGraph's server keeps
sending it the thread's later runs while it stays open.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from keel.core.configuration import Configuration
from keel.nodes.review_answer import ReviewDecisionError, review_decision
from keel.server.settings_policy import RequestRefused
from keel.server.studio_runs import SERVER_KEYS, SERVER_PREFIXES, recursion_limit, run_config
from keel.stores.review_queue import HELD_IN_LANGGRAPH_SERVER, ReviewQueue

REVIEWER_PERMISSIONS = frozenset({"role:reviewer", "role:admin"})


def is_reviewer(permissions: Iterable[str] | None) -> bool:
    """Whether the permissions include reviewing held answers (reviewers and admins)."""
    return bool(REVIEWER_PERMISSIONS & set(permissions or ()))


def held_in_studio(queue: ReviewQueue, thread_id: Any) -> dict[str, Any] | None:
    """The pending review item of a thread paused in this LangGraph server, or None."""
    if thread_id is None:
        return None
    return queue.pending_in_thread(str(thread_id), HELD_IN_LANGGRAPH_SERVER)


def retire_held_turns(queue: ReviewQueue, thread_id: Any, user_id: str) -> None:
    """The asker asked again in this thread (which discards the pause) or deleted it: their pending
    item there is stale, and with it a reviewer's access to the thread."""
    if thread_id is not None:
        queue.retire(str(thread_id), user_id, HELD_IN_LANGGRAPH_SERVER)


def check_review_resume(kwargs: dict[str, Any], thread_id: Any, cfg: Configuration, reviewer: str,
                        queue: ReviewQueue) -> dict[str, Any]:
    """Check a reviewer's resume run and make it the asker's, in place (LangGraph's server keeps using
    the dicts it passed); returns the review item it resumes. ``RequestRefused`` says why not."""
    command = kwargs.get("command")
    if not isinstance(command, dict) or set(command) != {"resume"}:
        raise RequestRefused(400, "a reviewer's run carries only command.resume, the decision: "
                                  "approve, edit (with text) or reject")
    if kwargs.get("input") is not None:
        raise RequestRefused(400, "a reviewer's run resumes the held turn: it asks nothing (no input)")
    config = run_config(kwargs)
    for settings in (config.get("configurable"), kwargs.get("context")):
        _no_settings(settings)
    item = held_in_studio(queue, thread_id)
    if item is None:
        raise RequestRefused(404, "no answer is waiting for review in this thread")
    command["resume"] = {**_decision(command["resume"], cfg, reviewer), "review_id": item["_id"]}
    config["recursion_limit"] = recursion_limit(config.get("recursion_limit"), cfg)
    asker = item["user_id"]
    config["configurable"] = {**(config.get("configurable") or {}), "user_id": asker}
    kwargs["context"] = {**(kwargs.get("context") or {}), "user_id": asker}
    return item


def _decision(value: Any, cfg: Configuration, reviewer: str) -> dict[str, Any]:
    """The decision as the graph will read it, with the caller as its reviewer (review_decision says
    what is wrong with one that is not a decision)."""
    if isinstance(value, str):
        value = {"action": value}
    try:
        return review_decision({**value, "reviewer": reviewer} if isinstance(value, dict) else value, cfg)
    except ReviewDecisionError as problem:
        raise RequestRefused(400, str(problem)) from None


def _no_settings(settings: Any) -> None:
    """A resume runs with the deployment's settings and the asker's id: a reviewer sets none."""
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise RequestRefused(400, "config.configurable and context must be objects")
    own = sorted(key for key in settings if key not in SERVER_KEYS and not key.startswith(SERVER_PREFIXES))
    if own:
        raise RequestRefused(400, f"a reviewer's run sets no settings ('{own[0]}'): it resumes the asker's "
                                  "turn as it was asked")
