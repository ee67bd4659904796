"""The messages for each answering strategy, built from the templates in chains/prompts.py."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from keel.chains.prompts import (
    CONTEXT_TEMPLATE,
    CONTINUATION_COVERED,
    CONTINUATION_NEXT_ITEM,
    CONTINUATION_PLAN_NOTE,
    CONTINUATION_PROMPT,
    CONTINUATION_TO_COVER,
    ENHANCED_RULES,
    FEW_SHOT_EXAMPLE,
    FEW_SHOT_EXAMPLES,
    GENERAL_CONCISE_RULES,
    GENERAL_KNOWLEDGE_RULES,
    GENERAL_STRICT_RULES,
    MISMATCH_NOTES,
    STRICT_RETRY_RULES,
    answer_prompt,
    general_prompt,
)
from keel.checks.structure import AnswerStructure
from keel.core.configuration import Configuration
from keel.core.state import Passage
from keel.core.text import codes_as_written

GROUNDED = "grounded"  # the enhanced prompt: critical rules + few-shot examples, all passages
STRICT = "strict"  # stricter rules, retry temperature, the better half of the passages
FOCUSED = "focused"  # stricter rules, retry temperature, the single best passage
EXTRACTIVE = "extractive"  # no model: the context sentences closest to the question, cited
GENERAL = "general"  # open mode without documents: general knowledge, marked as such
GENERAL_STRICT = "general_strict"  # open-mode retry: stricter rules (sure facts only), retry temperature
GENERAL_CONCISE = "general_concise"  # open-mode last resort: one short sentence, retry temperature

# Each retry changes strategy (the same prompt again mostly earns the same rejection); the last
# attempt is always the extractive one.
MODEL_STRATEGIES = (GROUNDED, STRICT, FOCUSED)
# Without passages nothing can be extracted: each retry tightens the general-knowledge prompt instead.
GENERAL_STRATEGIES = (GENERAL, GENERAL_STRICT, GENERAL_CONCISE)
GENERAL_RULES = {GENERAL: GENERAL_KNOWLEDGE_RULES, GENERAL_STRICT: GENERAL_STRICT_RULES,
                 GENERAL_CONCISE: GENERAL_CONCISE_RULES}


def strategy_for(attempt: int, has_passages: bool, max_attempts: int = 3) -> str:
    """The prompt strategy of an attempt: each retry asks differently, and the last one quotes the
    documents (extractive) or, with no passages, asks for a concise general answer."""
    if not has_passages:
        if max_attempts > 1 and attempt >= max_attempts:
            return GENERAL_CONCISE
        return GENERAL_STRATEGIES[min(attempt, len(GENERAL_STRATEGIES) - 1) - 1]
    if max_attempts > 1 and attempt >= max_attempts:
        return EXTRACTIVE
    return MODEL_STRATEGIES[min(attempt, len(MODEL_STRATEGIES)) - 1]


def format_passage(passage: Passage) -> str:
    """One passage as the model sees it, numbered so that its [Source N] can cite it."""
    page_label = f", page {passage['page']}" if passage.get("page") else ""
    return CONTEXT_TEMPLATE.format(
        number=passage["number"], source=passage["source"], page_label=page_label, text=passage["text"]
    )


def format_context(passages: Sequence[Passage]) -> str:
    """The passages as the prompt's context block, in their numbered order."""
    return "\n\n".join(format_passage(p) for p in passages)


def shown_passages(
    strategy: str, passages: Sequence[Passage], fraction: float = Configuration.strict_passage_fraction
) -> list[Passage]:
    """The passages a strategy shows the model (what its [Source N] may cite): a retry gets less
    context, the better half of the passages (strict) or only the best one (focused)."""
    if strategy in GENERAL_STRATEGIES:
        return []
    if strategy in (STRICT, FOCUSED):
        keep = 1 if strategy == FOCUSED else max(1, int(len(passages) * fraction))
        return list(passages)[:keep]
    return list(passages)


def build_messages(
    strategy: str,
    question: str,
    passages: Sequence[Passage],
    history: Sequence[AnyMessage],
    system_prompt: str,
    cfg: Configuration,
    mismatches: Sequence[str] = (),
) -> list[AnyMessage]:
    """``mismatches``: the previous attempt's answer-fit reason codes, named to a retry."""
    if strategy in GENERAL_RULES:
        return general_prompt.format_messages(
            system_prompt=system_prompt,
            rules=GENERAL_RULES[strategy].format(fallback_answer=cfg.fallback_answer),
            history=list(history),
            question=question,
        )
    shown = shown_passages(strategy, passages, cfg.strict_passage_fraction)
    if strategy in (STRICT, FOCUSED):
        rules, examples = STRICT_RETRY_RULES, FEW_SHOT_EXAMPLE
    else:
        rules = ENHANCED_RULES
        examples = FEW_SHOT_EXAMPLES.format(fallback_answer=cfg.fallback_answer)
    rules = rules.format(fallback_answer=cfg.fallback_answer)
    notes = mismatch_notes(mismatches, question, cfg)
    return answer_prompt.format_messages(
        system_prompt=system_prompt,
        rules=f"{rules}\n{notes}" if notes else rules,
        examples=examples,
        history=list(history),
        context=format_context(shown),
        question=question,
    )


def continuation_plan(answer: str, structure: AnswerStructure, cfg: Configuration) -> str:
    """Hints for the continuation: the next list number, the planned items not yet mentioned, the
    topics covered."""
    plan = ""
    if structure.next_number is not None:
        plan += CONTINUATION_NEXT_ITEM.format(number=structure.next_number)
    to_cover = structure.unmentioned(answer)
    if to_cover:
        plan += CONTINUATION_TO_COVER.format(items=", ".join(to_cover))
    covered = structure.covered_topics(cfg.covered_topics_limit, cfg.topic_label_words)
    if covered:
        plan += CONTINUATION_COVERED.format(topics="; ".join(covered))
    return plan


def continuation_messages(
    messages: Sequence[AnyMessage], answer: str, structure: AnswerStructure, cfg: Configuration
) -> list[AnyMessage]:
    """The continuation prompt (the answer's tail and what is left of its plan), as a new turn: for models
    that can only chat."""
    tail = answer[-cfg.continuation_tail_chars:].lstrip()
    prompt = CONTINUATION_PROMPT.format(tail=tail, plan=continuation_plan(answer, structure, cfg))
    return [*messages, AIMessage(answer), HumanMessage(prompt)]


def prefill_messages(
    messages: Sequence[AnyMessage], answer: str, structure: AnswerStructure, cfg: Configuration
) -> list[AnyMessage]:
    """The original messages with the plan added to the question; the partial answer itself is the
    assistant's prefix (models.chat.stream_prefilled), so the model continues it token by token."""
    plan = continuation_plan(answer, structure, cfg).strip()
    messages = list(messages)
    if plan and messages and messages[-1].type == "human":
        messages[-1] = HumanMessage(f"{messages[-1].content}\n\n{CONTINUATION_PLAN_NOTE.format(plan=plan)}")
    return messages


def mismatch_notes(mismatches: Sequence[str], question: str, cfg: Configuration) -> str:
    """One line per way the previous answer did not fit the question, for the retry's rules."""
    notes = []
    for code in mismatches:
        name, _, detail = code.partition(":")
        if name in MISMATCH_NOTES:
            notes.append(MISMATCH_NOTES[name].format(
                detail=detail.replace("|", " or "), fallback_answer=cfg.fallback_answer,
                entities=", ".join(codes_as_written(question)) or "what the question names",
            ))
    return "\n".join(notes)
