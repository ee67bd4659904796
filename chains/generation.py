"""One model call with continuation: keep generating while the answer is cut off (seed 000 §1).

The first call may use ``max_new_tokens``; each continuation 50% of it, at most
``max_continuations`` of them and ``max_total_tokens_factor`` x max_new_tokens in all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from chains.completeness import looks_complete
from chains.prompts import CONTINUATION_TEMPLATE
from graph.configuration import Configuration
from graph.state import EMPTY_USAGE, Usage, add_usage
from models.chat import generation_kwargs


@dataclass
class Generation:
    text: str = ""
    continuations: int = 0
    usage: Usage = field(default_factory=lambda: dict(EMPTY_USAGE))  # type: ignore[arg-type]


def _usage_of(message: AIMessage) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(
        prompt_tokens=int(meta.get("input_tokens", 0)),
        completion_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )


def _was_cut_off(message: AIMessage, text: str) -> bool:
    """The server's finish_reason when it gives one; otherwise judge the text itself."""
    reason = (message.response_metadata or {}).get("finish_reason")
    if reason is not None:
        return reason == "length"
    return not looks_complete(text)


def generate_with_continuation(
    model: BaseChatModel,
    messages: list[AnyMessage],
    cfg: Configuration,
    temperature: float,
    config: RunnableConfig | None = None,
) -> Generation:
    result = Generation()
    budget_total = int(cfg.max_new_tokens * cfg.max_total_tokens_factor)
    step_tokens = cfg.max_new_tokens
    conversation = list(messages)
    while True:
        reply = model.invoke(conversation, config=config, **generation_kwargs(model, step_tokens, temperature))
        piece = reply.content if isinstance(reply.content, str) else str(reply.content)
        result.text += piece
        result.usage = add_usage(result.usage, _usage_of(reply))
        spent = result.usage["completion_tokens"] or 0
        if not _was_cut_off(reply, result.text) or looks_complete(result.text):
            return result
        if result.continuations >= cfg.max_continuations or spent >= budget_total:
            return result
        result.continuations += 1
        step_tokens = max(1, min(int(cfg.max_new_tokens * cfg.continuation_fraction), budget_total - spent))
        conversation = list(messages) + [AIMessage(result.text), HumanMessage(CONTINUATION_TEMPLATE)]
