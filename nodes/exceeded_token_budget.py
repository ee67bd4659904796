"""exceeded_token_budget: a final node; tells the user the message is too long for the model. The
message is streamed like an answer (chains/answer_relay.py)."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.answer_relay import relay_answer
from keel.chains.prompts import EXCEEDED_TOKEN_BUDGET_MESSAGE
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState


def exceeded_token_budget(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    """The turn's answer when the question is longer than the model may read: say so, with the counts."""
    cfg = Configuration.from_runnable_config(config)
    tokens = components.count_tokens(cfg, state.get("question", ""))
    answer = EXCEEDED_TOKEN_BUDGET_MESSAGE.format(tokens=tokens, limit=cfg.max_input_tokens)
    return {
        "answer": answer,
        "status": AnswerStatus.EXCEEDED_TOKEN_BUDGET.value,
        "messages": [relay_answer(AIMessage(answer), config)],
    }
