"""generate_answer: one attempt of the answer subgraph. Each attempt changes strategy: the
enhanced prompt (rules + few-shot examples); then a stricter prompt at lower temperature with less
context (half, then the one best passage); the last attempt an extractive answer from the context
sentences closest to the question (no model call). Within an attempt the answer is continued while
it is cut off (keel/checks/completeness.py).

Streaming: the filtered answer text, the continuation indicator and attempt changes are LangGraph
custom stream events (``stream_mode="custom"``, ``subgraphs=True``); raw model tokens are kept out
of ``stream_mode="messages"``, so no reasoning marker reaches a client. Every event carries its
attempt number. Streamed text cannot be unsent, so rejected text is retracted explicitly:
``keel.discard`` (a retry starts: the previous attempt's whole draft is not the answer) and
``keel.revert`` (a continuation was dropped or the answer trimmed: ``text`` is what to keep).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.answer_messages import (
    EXTRACTIVE,
    FOCUSED,
    GENERAL_STRATEGIES,
    STRICT,
    build_messages,
    strategy_for,
)
from keel.chains.context import count_message_tokens
from keel.chains.escalation import settings_for_attempt
from keel.chains.extractive import extractive_answer
from keel.chains.generation import GenerationTools, generate_with_continuation
from keel.chains.image_inputs import with_images
from keel.chains.model_recovery import ModelUnavailableError, run_with_model_recovery
from keel.chains.prompts import FEW_SHOT_ANSWERS
from keel.components import Components, draft_writer
from keel.core.configuration import Configuration
from keel.core.state import AnswerState, Passage


def generate_answer(state: AnswerState, config: RunnableConfig, *, components: Components) -> dict:
    """One attempt: the prompt of this attempt's strategy, the model's draft streamed as it is written."""
    cfg = Configuration.from_runnable_config(config)
    attempt = state.get("attempt", 0) + 1
    # a retry may be written by a stronger model; the prompt is fitted to what that model takes
    cfg = components.fitted(settings_for_attempt(cfg, attempt, components, bool(state.get("images"))))
    passages = list(state.get("passages", []))
    strategy = strategy_for(attempt, bool(passages), cfg.max_attempts)
    writer = draft_writer(cfg, config)  # silent while answers may be held for review

    def emit(event: dict) -> None:
        writer({**event, "attempt": attempt})

    if attempt > 1:  # the previous attempt was rejected: a client must drop the draft it streamed
        reason = ",".join(state.get("deductions") or {}) or ("abstained" if state.get("abstained") else "low_quality")
        writer({"event": "keel.discard", "attempt": attempt - 1, "reason": reason,
                "quality": state.get("quality")})
    emit({"event": "keel.attempt", "strategy": strategy})
    base = {"attempt": attempt, "strategy": strategy, "model": "" if strategy == EXTRACTIVE else cfg.chat_model, "error": "", "attempt_continuations": 0,
            "stops": []}
    if strategy == EXTRACTIVE:
        started = time.perf_counter()
        numbered = [(p["number"], p["text"]) for p in passages]
        draft = extractive_answer(state["question"], numbered, cfg, components.similarity(cfg))
        timings = {"generation_s": 0.0, "checks_s": round(time.perf_counter() - started, 4)}
        return {**base, "draft": draft, "parse_layer": "extractive", "parse_error": None, "timings": timings,
                "attempt_usage": {}}
    tools = GenerationTools(
        semantic=components.similarity(cfg),
        count_tokens=lambda text: components.count_tokens(cfg, text),
        emit=emit,
        eos_token_ids=_eos_token_ids(components, cfg) if cfg.eos_prevention else (),
        ignore_answers=FEW_SHOT_ANSWERS,
        tokenizer=_chat_tokenizer(components, cfg),
        timeout_s=cfg.request_timeout_s,
    )
    messages = with_images(_fitted_messages(strategy, state, passages, cfg, components), state.get("images") or [])
    temperature = cfg.retry_temperature if strategy in (STRICT, FOCUSED) or attempt > 1 else cfg.temperature
    contexts = [] if strategy in GENERAL_STRATEGIES else [p["text"] for p in passages]

    def discard_draft(endpoint: str) -> None:  # the failed try may have streamed part of a draft
        writer({"event": "keel.discard", "attempt": attempt, "reason": "model_retry"})

    try:
        generation = run_with_model_recovery(
            components, cfg,
            lambda model: generate_with_continuation(
                model, messages, cfg, temperature, config, question=state["question"], contexts=contexts, tools=tools,
            ),
            on_retry=discard_draft,
        )
    except ModelUnavailableError as error:  # reported as status error, don't crash the turn
        return {**base, "draft": "", "error": error.reason}
    return {
        **base,
        "draft": generation.text,
        "parse_layer": generation.parse_layer,
        "parse_error": generation.parse_error,
        "continuations": state.get("continuations", 0) + generation.continuations,
        "attempt_continuations": generation.continuations,
        "usage": generation.usage,
        "attempt_usage": generation.usage,
        "stops": generation.stops,
        "timings": {"generation_s": round(generation.generation_seconds, 4),
                    "checks_s": round(generation.check_seconds, 4)},
    }


def _fitted_messages(
    strategy: str, state: AnswerState, passages: list[Passage], cfg: Configuration, components: Components
) -> list[AnyMessage]:
    """The strategy's messages, dropping the last passages while the prompt and the answer's
    tokens would not fit the model's context window (the rules and examples take room too)."""
    history: Sequence[AnyMessage] = state.get("history", [])
    while True:
        messages = build_messages(strategy, state["question"], passages, history, state["system_prompt"], cfg,
                                  mismatches=list(state.get("deductions") or {}))
        used = count_message_tokens(messages, cfg, components)
        if used + cfg.max_new_tokens <= cfg.llm_context_window or len(passages) <= 1:
            return messages
        passages = passages[:-1]


def _chat_tokenizer(components: Components, cfg: Configuration):
    try:
        return components.chat_tokenizer(cfg)
    except Exception:  # noqa: BLE001 - without it: no true continuation, no logit_bias; both degrade
        return None


def _eos_token_ids(components: Components, cfg: Configuration) -> list[int]:
    """End-of-sequence token ids of the chat model (for servers that only take logit_bias)."""
    tokenizer = _chat_tokenizer(components, cfg)
    if tokenizer is None:
        return []
    ids = {getattr(tokenizer, "eos_token_id", None)}
    for token in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>"):
        try:
            token_id = tokenizer.convert_tokens_to_ids(token)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(token_id, int) and token_id != getattr(tokenizer, "unk_token_id", None):
            ids.add(token_id)
    return sorted(i for i in ids if isinstance(i, int))
