"""review_answer: a person approves, edits or rejects a held turn before the asker sees it.

Entered only after an answering node held its turn for review (nodes/review_hold.py). The node files
the turn in the review queue and pauses the run with LangGraph's ``interrupt``; the payload is what a
reviewer needs (the question, the draft, its sources, quality, status, attempts). The run resumes
with ``Command(resume={"action": "approve" | "edit" | "reject", "text": ..., "note": ...,
"reviewer": ...})`` from the checkpoint, in this process or any other that shares the checkpointer
(``keel review``, the server's /review routes, LangGraph Studio). Then the turn's answer, status and
message follow the reviewer: approve shows the draft, edit the reviewer's text, reject the fallback
(status review_rejected). The record of who reviewed and when goes into the output (``review``),
the conversation's message and the queue.

LangGraph runs a paused node again from its start when it resumes, so everything before
``interrupt`` is idempotent: the item's id was chosen by the answering node and kept in the
checkpoint, and filing an item twice changes nothing. A resume value that is not a decision pauses
the run again with the problem named, so nothing of the turn is lost.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from keel.checks.language import localized_fallback
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState
from keel.core.text import cited_sources
from keel.nodes.answering import history_message, said
from keel.retrievers.passages import citations_of, sources_markdown, sources_of
from keel.stores.review_queue import HELD_IN_KEEL, HELD_IN_LANGGRAPH_SERVER, ReviewQueue

ACTIONS = ("approve", "edit", "reject")
DONE_STATE = {"approve": "approved", "edit": "edited", "reject": "rejected"}
EDITED_REASON = "reviewer_edited"
REJECTED_REASON = "review_rejected"


class ReviewDecisionError(ValueError):
    """A resume value that is not a reviewer's decision; the message says what is wrong."""


def review_decision(value: Any, cfg: Configuration) -> dict[str, Any]:
    """A reviewer's decision, checked: ``action`` approve / edit (with ``text``) / reject (with an
    optional ``note``), who decided (``reviewer``), and optionally the ``review_id`` it is for: a
    decision bound to one held turn never settles a later one paused in the same conversation. A
    bare action name is accepted too."""
    if isinstance(value, str):
        value = {"action": value}
    if not isinstance(value, dict):
        raise ReviewDecisionError("a review decision is an object with an action: approve, edit or reject")
    action = value.get("action")
    if action not in ACTIONS:
        raise ReviewDecisionError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    decision: dict[str, Any] = {"action": action, "reviewer": str(value.get("reviewer") or "unknown")}
    for name in ("text", "note", "review_id"):
        item = value.get(name)
        if item is None:
            continue
        if not isinstance(item, str):
            raise ReviewDecisionError(f"{name} must be text")
        if len(item) > cfg.review_text_max_chars:
            raise ReviewDecisionError(f"{name} is longer than {cfg.review_text_max_chars} characters")
        decision[name] = item
    if action == "edit" and not decision.get("text", "").strip():
        raise ReviewDecisionError("edit needs the reviewer's answer text")
    return decision


def review_payload(state: KeelState, config: RunnableConfig) -> dict[str, Any]:
    """What the reviewer sees: the question, the draft and its sources, what the asker would get
    without review, its quality, status and attempts, and whose conversation it is."""
    held = state["held_answer"]
    turn = held["turn"]
    configurable = (config or {}).get("configurable") or {}
    return {
        "review_id": held["review_id"],
        "thread_id": configurable.get("thread_id"),
        "user_id": configurable.get("user_id"),
        "question": state.get("question", ""),
        "draft": held["draft"],
        "sources": held["draft_sources"],
        "sources_markdown": held["draft_markdown"],
        "would_show": turn.get("answer", ""),
        "quality": turn.get("quality", 0.0),
        "status": turn.get("status", ""),
        "attempts": turn.get("attempts", 0),
        "reasons": list(turn.get("reasons") or []),
        "actions": list(ACTIONS),
        "held_in": held_in(config),
    }


def held_in(config: RunnableConfig) -> str:
    """Where the paused run can be resumed: a LangGraph server (Studio, ``langgraph dev``) names
    the assistant it runs in every run's config; Keel's own runs never do."""
    configurable = (config or {}).get("configurable") or {}
    return HELD_IN_LANGGRAPH_SERVER if configurable.get("assistant_id") else HELD_IN_KEEL


def review_answer(state: KeelState, config: RunnableConfig, *, queue: ReviewQueue | None = None) -> dict:
    """Hold an answer for a reviewer's decision (LangGraph interrupt) when the deployment asks for review."""
    cfg = Configuration.from_runnable_config(config)
    held = state.get("held_answer")
    if not held:
        return {}
    payload = review_payload(state, config)
    if queue is not None:
        queue.file({"_id": held["review_id"], **payload})
    decision = None
    while decision is None:  # a value that is no decision asks again, naming the problem
        value = interrupt(payload)
        try:
            decision = review_decision(value, cfg)
            if decision.get("review_id") not in (None, held["review_id"]):
                raise ReviewDecisionError(f"the decision is for review {decision['review_id']}, and the turn "
                                          f"waiting here is review {held['review_id']}")
        except ReviewDecisionError as problem:
            payload, decision = {**payload, "problem": str(problem)}, None
    record = {"id": held["review_id"], "state": DONE_STATE[decision["action"]], "reviewer": decision["reviewer"],
              "reviewed_at": datetime.now(UTC).isoformat()}
    turn = reviewed_turn(state, cfg, decision, record)
    if queue is not None:
        queue.mark_done(held["review_id"], {**record, "_id": held["review_id"], "note": decision.get("note"),
                                            "answer": turn["answer"], "final_status": turn["status"]})
    return said(turn, config)


def reviewed_turn(state: KeelState, cfg: Configuration, decision: dict, record: dict) -> dict:
    """The turn after the reviewer's decision, with its message under the id the asker's waiting
    message had, so the conversation shows the reviewed answer in its place."""
    held = state["held_answer"]
    turn = dict(held["turn"])
    action = decision["action"]
    reasons = list(turn.get("reasons") or [])
    citations: list[dict] = []
    if action == "approve" and turn.get("status") == AnswerStatus.SUCCESS.value:
        citations = held["draft_citations"]
    elif action == "approve" and held["draft"]:  # a person vouches for the draft the checks held back
        turn.update(answer=held["draft"], status=AnswerStatus.SUCCESS.value, sources=held["draft_sources"],
                    sources_markdown=held["draft_markdown"])
        citations = held["draft_citations"]
    elif action == "edit":
        passages = list(state.get("passages") or [])
        cited = cited_sources(decision["text"])
        shown = [p for p in passages if p["number"] in cited]  # an edit lists only what it cites
        turn.update(answer=decision["text"], status=AnswerStatus.SUCCESS.value, sections=None,
                    sources=sources_of(shown, cited) if shown else [],
                    sources_markdown=sources_markdown(shown, cited) if shown else "")
        citations = citations_of(shown, cited) if shown else []
        reasons.append(EDITED_REASON)
    elif action == "reject":
        rejected = cfg.review_rejected_answer or localized_fallback(state.get("language", cfg.default_language), cfg)
        turn.update(answer=rejected, status=AnswerStatus.REVIEW_REJECTED.value, sources=[], sources_markdown="",
                    sections=None)
        reasons.append(REJECTED_REASON)
    message = history_message(turn["answer"], turn["status"], turn.get("sources") or [], citations)
    message.id = held["message_id"]
    message.additional_kwargs["keel"]["review"] = record
    return {**turn, "reasons": reasons, "review": record, "held_answer": None, "messages": [message]}
