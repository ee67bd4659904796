"""The messages for each answering strategy, built from the templates in chains/prompts.py."""

from __future__ import annotations

from typing import Sequence

from langchain_core.messages import AnyMessage

from chains.prompts import (
    CONTEXT_TEMPLATE,
    FEW_SHOT_EXAMPLE,
    GENERAL_KNOWLEDGE_RULES,
    GROUNDED_RULES,
    STRICT_RETRY_RULES,
    answer_prompt,
    general_prompt,
)
from graph.configuration import Configuration
from graph.state import Passage

GROUNDED = "grounded"
STRICT = "strict"
EXTRACTIVE = "extractive"
GENERAL = "general"

# Attempt n uses STRATEGIES[n-1]; each retry changes strategy (seed 001, issue 5).
DOCUMENT_STRATEGIES = (GROUNDED, STRICT, EXTRACTIVE)
GENERAL_STRATEGIES = (GENERAL, GENERAL, GENERAL)


def strategy_for(attempt: int, has_passages: bool) -> str:
    strategies = DOCUMENT_STRATEGIES if has_passages else GENERAL_STRATEGIES
    return strategies[min(attempt, len(strategies)) - 1]


def format_passage(passage: Passage) -> str:
    page_label = f", page {passage['page']}" if passage.get("page") else ""
    return CONTEXT_TEMPLATE.format(
        number=passage["number"], source=passage["source"], page_label=page_label, text=passage["text"]
    )


def format_context(passages: Sequence[Passage]) -> str:
    return "\n\n".join(format_passage(p) for p in passages)


def build_messages(
    strategy: str,
    question: str,
    passages: Sequence[Passage],
    history: Sequence[AnyMessage],
    system_prompt: str,
    cfg: Configuration,
) -> list[AnyMessage]:
    if strategy == GENERAL:
        return general_prompt.format_messages(
            system_prompt=system_prompt,
            rules=GENERAL_KNOWLEDGE_RULES.format(fallback_answer=cfg.fallback_answer),
            history=list(history),
            question=question,
        )
    if strategy == STRICT:
        # Less context for the retry: the best half of the passages, at least one.
        shown = list(passages)[: max(1, len(passages) // 2)]
        rules, examples = STRICT_RETRY_RULES, FEW_SHOT_EXAMPLE
    else:
        shown, rules, examples = list(passages), GROUNDED_RULES, FEW_SHOT_EXAMPLE
    return answer_prompt.format_messages(
        system_prompt=system_prompt,
        rules=rules.format(fallback_answer=cfg.fallback_answer),
        examples=examples,
        history=list(history),
        context=format_context(shown),
        question=question,
    )
