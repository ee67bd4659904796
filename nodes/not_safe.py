"""not_safe: a final node; refuses a request the moderator flagged (or an empty one). The refusal is
one sentence in the question's language naming what the request touched (chains/refusals.py), no
model call; it is streamed like an answer (chains/answer_relay.py)."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.answer_relay import relay_answer
from keel.chains.refusals import refusal_message
from keel.checks.language import detect_language
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState

MODERATION_REASON = "moderation:"  # the guardrails node's reason code: moderation:<category>


def not_safe(state: KeelState, config: RunnableConfig) -> dict:
    """The turn's answer when the guardrails refused the question: a refusal in the asker's language."""
    if state.get("guardrail") == "empty":
        answer = "Please ask a question."
        return {"answer": answer, "status": AnswerStatus.ERROR.value,
                "messages": [relay_answer(AIMessage(answer), config)]}
    cfg = Configuration.from_runnable_config(config)
    category = next((reason[len(MODERATION_REASON):] for reason in state.get("reasons", [])
                     if reason.startswith(MODERATION_REASON)), None)
    language = detect_language(state.get("question", ""), cfg.default_language, cfg.language_min_confidence)
    answer = refusal_message(category, language)
    return {
        "answer": answer,
        "status": AnswerStatus.NOT_SAFE.value,
        "messages": [relay_answer(AIMessage(answer), config)],
    }
