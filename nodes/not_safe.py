"""not_safe: a final node; refuses a request the moderator flagged (or an empty one)."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from keel.chains.prompts import NOT_SAFE_MESSAGE
from keel.core.state import AnswerStatus, KeelState


def not_safe(state: KeelState) -> dict:
    if state.get("guardrail") == "empty":
        answer = "Please ask a question."
        return {"answer": answer, "status": AnswerStatus.ERROR.value, "messages": [AIMessage(answer)]}
    return {
        "answer": NOT_SAFE_MESSAGE,
        "status": AnswerStatus.NOT_SAFE.value,
        "messages": [AIMessage(NOT_SAFE_MESSAGE)],
    }
