"""Human review over HTTP: the queue of answers held for a reviewer, and the actions that resume them.

    GET  /review                      the pending items, oldest first
    GET  /review/{review_id}          one item: question, draft, sources, quality, status, attempts
    POST /review/{review_id}/approve  show the draft
    POST /review/{review_id}/edit     {"text": "..."}: show the reviewer's text instead
    POST /review/{review_id}/reject   {"note": "..."} (optional): show the fallback, status review_rejected

Only a principal whose key has the role reviewer or admin may use them (403 for any other); an id
that is unknown, already reviewed or no longer paused is a 404, so an id never lets a reviewer
resume a conversation that is not waiting for them. The item names the conversation and the asker;
the resume runs the paused graph as the asker (their user id, the deployment's settings), from the
checkpoint in MongoDB, so it works in any process that shares it (``keel review`` uses the same
``resume_review``). The queue also lists turns paused in LangGraph Studio (``held_in``:
``langgraph_server``); their checkpoints are in Studio's server, so acting on one here is a 409 that
says to resume it there.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from langgraph.types import Command
from pydantic import BaseModel, Field

from keel.core.configuration import Configuration
from keel.nodes.review_answer import ReviewDecisionError, review_decision
from keel.server.auth import ApiKeys, credential_from_headers
from keel.server.document_routes import checked_id
from keel.server.ownership import conversation_of
from keel.stores.review_queue import HELD_IN_LANGGRAPH_SERVER, PENDING, ReviewQueue

REVIEWER_ROLES = ("reviewer", "admin")


class ReviewNotFound(LookupError):
    """No pending review with this id: unknown, already reviewed, taken by another reviewer, or
    its conversation went on without it."""


class ReviewHeldElsewhere(LookupError):
    """The turn is paused in a LangGraph server's persistence (Studio, ``langgraph dev``): only that
    server can resume it, with a reviewer's run there (keel/server/studio_review.py)."""


def review_item(record: dict[str, Any]) -> dict[str, Any]:
    """A queue record as a reviewer sees it (``review_id`` instead of Mongo's ``_id``)."""
    item = {key: value for key, value in record.items() if key not in ("_id", "actions")}
    return {"review_id": record["_id"], **item}


def is_paused_for(graph, config: dict, review_id: str) -> bool:
    """Whether the conversation's run is paused at this review (and not at another, or not at all)."""
    snapshot = graph.get_state(config)
    return any(isinstance(pause.value, dict) and pause.value.get("review_id") == review_id
               for pause in snapshot.interrupts)


def resume_review(graph, queue: ReviewQueue, review_id: str, decision: dict[str, Any], reviewer: str,
                  cfg: Configuration, deployment: dict[str, Any]) -> dict[str, Any]:
    """Resume the turn paused at ``review_id`` with the reviewer's decision, as its asker; returns the
    turn's result. ``ReviewNotFound`` when nothing is waiting there; ``ReviewDecisionError`` (a
    ValueError) for a decision that is not one (checked before anything is resumed)."""
    record = queue.get(review_id)
    if not record or record.get("state") != PENDING:
        raise ReviewNotFound(f"no pending review {review_id}")
    if record.get("held_in") == HELD_IN_LANGGRAPH_SERVER:
        raise ReviewHeldElsewhere(f"review {review_id} is paused in LangGraph Studio (thread {record.get('thread_id')}): "
                                  "resume it there with a reviewer's key")
    checked = review_decision({**decision, "reviewer": reviewer, "review_id": review_id}, cfg)
    config = {"configurable": {**deployment, "user_id": record["user_id"], "thread_id": record["thread_id"]}}
    if not is_paused_for(graph, config, review_id):
        queue.mark_stale(review_id)  # the conversation went on: this draft can no longer be shown
        raise ReviewNotFound(f"review {review_id} is no longer waiting: its conversation went on")
    if not queue.claim(review_id, reviewer):
        raise ReviewNotFound(f"review {review_id} is being resumed by another reviewer")
    try:
        result = graph.invoke(Command(resume=checked), config)
    except BaseException:
        queue.release(review_id)
        raise
    return result


def review_outcome(review_id: str, result: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """What a reviewer is told after an action: the answer the asker now sees and its status, in the
    asker's conversation (by the asker's own id of it)."""
    conversation = conversation_of(str(record.get("user_id") or ""), str(record.get("thread_id") or ""))
    return {"review_id": review_id, "conversation_id": conversation, "answer": result.get("answer"),
            "status": result.get("status"), "review": result.get("review")}


class EditBody(BaseModel):
    """A reviewer's edit: the answer that replaces the held draft."""
    text: str = Field(..., description="The answer the asker gets instead of the draft.")


class RejectBody(BaseModel):
    """A reviewer's rejection, with an optional note."""
    note: str | None = Field(None, description="Why the draft was rejected, kept with the review item.")


def add_review_routes(app: FastAPI, cfg: Configuration, graph, queue: ReviewQueue, api_keys: ApiKeys | None,
                      deployment: dict[str, Any]) -> None:
    """Register the /review routes (see the module's docstring)."""

    def reviewer_of(request: Request) -> str:
        principal = api_keys.verify(credential_from_headers(dict(request.headers))) if api_keys else None
        if principal is None or principal.role not in REVIEWER_ROLES:
            raise HTTPException(status_code=403, detail="reviewing answers needs the reviewer or admin role")
        return principal.name

    def pending(review_id: str) -> dict[str, Any]:
        checked_id("review_id", review_id, cfg)
        record = queue.get(review_id)
        if not record or record.get("state") != PENDING:
            raise HTTPException(status_code=404, detail="review not found")
        return record

    def act(review_id: str, request: Request, decision: dict[str, Any]) -> dict[str, Any]:
        reviewer = reviewer_of(request)
        record = pending(review_id)
        try:
            result = resume_review(graph, queue, review_id, decision, reviewer, cfg, deployment)
        except ReviewNotFound:
            raise HTTPException(status_code=404, detail="review not found") from None
        except ReviewHeldElsewhere as elsewhere:
            raise HTTPException(status_code=409, detail=str(elsewhere)) from None
        except ReviewDecisionError as problem:
            raise HTTPException(status_code=400, detail=str(problem)) from None
        return review_outcome(review_id, result, record)

    @app.get("/review")
    def list_reviews(request: Request) -> dict:
        reviewer_of(request)
        return {"items": [review_item(record) for record in queue.pending(cfg.review_queue_listed)]}

    @app.get("/review/{review_id}")
    def show_review(review_id: str, request: Request) -> dict:
        reviewer_of(request)
        return review_item(pending(review_id))

    @app.post("/review/{review_id}/approve")
    def approve_review(review_id: str, request: Request) -> dict:
        return act(review_id, request, {"action": "approve"})

    @app.post("/review/{review_id}/edit")
    def edit_review(review_id: str, body: EditBody, request: Request) -> dict:
        return act(review_id, request, {"action": "edit", "text": body.text})

    @app.post("/review/{review_id}/reject")
    def reject_review(review_id: str, request: Request, body: RejectBody | None = None) -> dict:
        return act(review_id, request, {"action": "reject", "note": body.note if body else None})
