"""not_safe: a final node; refuses a request the moderator flagged (or an empty one). The refusal is
streamed like an answer (chains/answer_relay.py)."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.answer_relay import relay_answer
from keel.chains.prompts import NOT_SAFE_MESSAGE
from keel.core.state import AnswerStatus, KeelState


def not_safe(state: KeelState, config: RunnableConfig) -> dict:
    if state.get("guardrail") == "empty":
        answer = "Please ask a question."
        return {"answer": answer, "status": AnswerStatus.ERROR.value,
                "messages": [relay_answer(AIMessage(answer), config)]}
    return {
        "answer": NOT_SAFE_MESSAGE,
        "status": AnswerStatus.NOT_SAFE.value,
        "messages": [relay_answer(AIMessage(NOT_SAFE_MESSAGE), config)],
    }
