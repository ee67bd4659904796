"""What the three answering nodes share: fit passages to the budget, run the answer subgraph,
and turn its result into the turn's answer, status, sources and history message."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig

from chains.confidence import retrieval_confidence
from chains.language import localized_fallback
from chains.text import cited_sources
from graph.configuration import Configuration
from graph.state import AnswerStatus, KeelState, Passage, Route
from nodes.components import Components
from nodes.context import context_budget, fit_passages, history_before_question, sources_of


def run_answer_graph(
    state: KeelState,
    config: RunnableConfig,
    components: Components,
    answer_graph: Runnable,
    passages: list[Passage],
    route: Route,
) -> dict:
    cfg = Configuration.from_runnable_config(config)
    history = history_before_question(state.get("messages", []), cfg.history_max_turns)
    system_prompt = state.get("system_prompt", "")
    fixed = [system_prompt, state["question"], *(str(m.content) for m in history)]
    fitted = fit_passages(passages, context_budget(cfg, components, fixed), cfg, components) if passages else []
    confidence = retrieval_confidence(
        [p["similarity"] for p in fitted], cfg.confidence_slope, cfg.confidence_intercept
    )
    if route is not Route.PRETRAINED_CORPUS:
        # Pre-generation checks (seed 004 layer 1): no model call without enough context.
        if not fitted:
            return fallback_result(state, cfg, AnswerStatus.INSUFFICIENT_CONTEXT, route, ["no_context"])
        if confidence < cfg.min_confidence:
            return fallback_result(
                state, cfg, AnswerStatus.LOW_CONFIDENCE, route, [f"low_retrieval_confidence:{confidence}"], confidence
            )
    result = answer_graph.invoke(
        {
            "question": state["question"],
            "system_prompt": system_prompt,
            "route": route.value,
            "passages": fitted,
            "history": history,
        },
        config,
    )
    return turn_result(result, fitted, route, state, cfg, confidence)


def turn_result(
    result: dict, passages: list[Passage], route: Route, state: KeelState, cfg: Configuration, confidence: float
) -> dict:
    status = result.get("status", AnswerStatus.ERROR.value)
    answer = result.get("answer", "")
    success = status == AnswerStatus.SUCCESS.value
    if not success and answer == cfg.fallback_answer:
        answer = localized_fallback(state.get("language", cfg.default_language), cfg)
    sources = sources_of(passages, cited_sources(answer)) if success else []
    return {
        "answer": answer,
        "status": status,
        "route": route.value,
        "sources": sources,
        "passages": passages,
        "quality": float(result.get("quality") or 0.0),
        "confidence": confidence,
        "grounding_score": result.get("grounding_score"),
        "parse_layer": result.get("parse_layer", ""),
        "attempts": int(result.get("attempt", 0)),
        "continuations": int(result.get("continuations", 0)),
        "usage": result.get("usage"),
        "reasons": list(result.get("reasons", [])),
        "messages": [history_message(answer, status, sources)],
    }


def fallback_result(
    state: KeelState,
    cfg: Configuration,
    status: AnswerStatus,
    route: Route,
    reasons: list[str],
    confidence: float = 0.0,
) -> dict:
    """The safe "I don't know" turn, in the question's language, without a model call."""
    answer = localized_fallback(state.get("language", cfg.default_language), cfg)
    return {
        "answer": answer,
        "status": status.value,
        "route": route.value,
        "sources": [],
        "confidence": confidence,
        "quality": 0.0,
        "attempts": 0,
        "parse_layer": "",
        "reasons": reasons,
        "messages": [history_message(answer, status.value, [])],
    }


def history_message(answer: str, status: str, sources: list) -> AIMessage:
    """The turn as the conversation remembers it: the answer, with status and sources alongside."""
    return AIMessage(answer, additional_kwargs={"keel": {"status": status, "sources": sources}})



