"""Holding a turn back for human review: whether the deployment's review_mode wants a person to see
this turn before the asker does, and the turn the asker gets meanwhile (status awaiting_review).

An answering node asks ``held_for_review`` before it relays its answer: when review applies, the
answer never reaches the asker's streams or the conversation. The turn that would have been shown is
kept in ``held_answer`` (the run's checkpoint, never the graph's output) for ``review_answer``, which
pauses the run for the reviewer (nodes/review_answer.py). The asker's message carries the id the
reviewed answer will have, so the conversation shows the reviewed answer in its place afterwards.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage

from keel.chains.answer_relay import ANSWER_ID_PREFIX
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState, Passage
from keel.core.text import cited_sources
from keel.retrievers.passages import citations_of, sources_markdown, sources_of

PENDING = "pending"


def review_applies(cfg: Configuration, turn: dict) -> bool:
    """Whether the deployment's review_mode sends this turn to a reviewer."""
    mode = cfg.review_mode
    if mode == "always":
        return True
    if mode == "below_threshold":  # the answer loop ran and its best attempt stayed below the bar
        return int(turn.get("attempts") or 0) > 0 and float(turn.get("quality") or 0.0) < cfg.quality_threshold
    if mode == "statuses":
        return turn.get("status") in cfg.review_statuses
    return False


def draft_of(turn: dict, result: dict | None) -> str:
    """The text a reviewer may approve: the accepted answer, else the answer loop's best attempt (which
    the checks rejected and the asker would not see), else nothing (no model text was written)."""
    if turn.get("status") == AnswerStatus.SUCCESS.value:
        return str(turn.get("answer") or "")
    best = (result or {}).get("best") or {}
    return "" if best.get("abstained") else str(best.get("answer") or "")


def held_for_review(turn: dict, state: KeelState, cfg: Configuration, draft: str = "",
                    passages: list[Passage] | None = None) -> dict | None:
    """The turn as the asker sees it while a reviewer decides, or None when no review applies."""
    if not review_applies(cfg, turn):
        return None
    passages = list(passages if passages is not None else state.get("passages") or [])
    cited = cited_sources(draft)
    review_id = uuid.uuid4().hex
    message_id = f"{ANSWER_ID_PREFIX}{uuid.uuid4()}"
    notice = cfg.review_pending_message
    waiting = AIMessage(notice, id=message_id, additional_kwargs={"keel": {
        "status": AnswerStatus.AWAITING_REVIEW.value, "sources": [], "review": {"id": review_id, "state": PENDING}}})
    held: dict[str, Any] = {
        "review_id": review_id,
        "message_id": message_id,
        "turn": {key: value for key, value in turn.items() if key != "messages"},
        "draft": draft,
        "draft_sources": sources_of(passages, cited) if draft else [],
        "draft_markdown": sources_markdown(passages, cited) if draft else "",
        "draft_citations": citations_of(passages, cited) if draft else [],
    }
    return {**turn, "answer": notice, "status": AnswerStatus.AWAITING_REVIEW.value, "sources": [],
            "sources_markdown": "", "sections": None, "review": {"id": review_id, "state": PENDING},
            "messages": [waiting], "held_answer": held}


def needs_review(state: KeelState) -> str:
    """Conditional edge after an answering node: a held turn goes to review_answer, any other ends."""
    return "review_answer" if state.get("held_answer") else "__end__"
