"""generate_answer: one attempt of the answer subgraph. Each attempt changes strategy:
grounded prompt, then a stricter prompt at lower temperature with less context, then an
extractive answer built from the context sentences closest to the question (no model call)."""

from __future__ import annotations

import logging

from langchain_core.runnables import RunnableConfig

from chains.answer_checks import best_supported_sentences
from chains.answer_messages import EXTRACTIVE, STRICT, build_messages, strategy_for
from chains.generation import generate_with_continuation
from graph.configuration import Configuration
from graph.state import AnswerState
from nodes.components import Components
from nodes.validate_answer import question_similarities

log = logging.getLogger(__name__)
EXTRACTIVE_SENTENCES = 2


def generate_answer(state: AnswerState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    attempt = state.get("attempt", 0) + 1
    passages = state.get("passages", [])
    strategy = strategy_for(attempt, bool(passages))
    if strategy == EXTRACTIVE:
        return {"attempt": attempt, "strategy": strategy, "draft": _extractive(state, cfg, components)}
    messages = build_messages(
        strategy, state["question"], passages, state.get("history", []), state["system_prompt"], cfg
    )
    temperature = cfg.retry_temperature if strategy == STRICT else cfg.temperature
    try:
        generation = generate_with_continuation(components.chat(cfg), messages, cfg, temperature, config)
    except Exception as error:  # the model or its server failed: report it, don't crash the turn
        log.exception("chat model call failed on attempt %d", attempt)
        return {"attempt": attempt, "strategy": strategy, "draft": "", "error": f"{type(error).__name__}: {error}"}
    return {
        "attempt": attempt,
        "strategy": strategy,
        "draft": generation.text,
        "continuations": state.get("continuations", 0) + generation.continuations,
        "usage": generation.usage,
    }


def _extractive(state: AnswerState, cfg: Configuration, components: Components) -> str:
    """The context sentences most similar to the question, cited; the fallback if none is close."""
    embedded = question_similarities(components, cfg)
    best_similarity = 0.0

    def similarities(question: str, sentences: list[str]) -> list[float]:
        nonlocal best_similarity
        scores = embedded(question, sentences)
        best_similarity = max(scores, default=0.0)
        return scores

    passages = [(p["number"], p["text"]) for p in state.get("passages", [])]
    sentences = best_supported_sentences(state["question"], passages, EXTRACTIVE_SENTENCES, similarities)
    if not sentences or best_similarity < cfg.relevance_threshold:
        return cfg.fallback_answer
    return f"<answer>{' '.join(sentences)}</answer>"
