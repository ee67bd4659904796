"""validate_answer: parse the draft, check grounding and citations, score its quality (seed 001
deductions plus the grounding term), and keep the best attempt so far."""

from __future__ import annotations

import logging

from langchain_core.runnables import RunnableConfig

from chains.answer_checks import is_fallback, parse_answer, quality_score
from chains.grounding import answer_focus, cosine, grounding_score
from chains.text import cited_sources
from graph.configuration import Configuration
from graph.state import AnswerState
from nodes.components import Components

log = logging.getLogger("keel.answer")


def validate_answer(state: AnswerState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    if state.get("error"):
        return {"quality": 0.0, "reasons": [*state.get("reasons", []), "model_error"]}
    parsed = parse_answer(state.get("draft", ""))
    passages = state.get("passages", [])
    abstained = is_fallback(parsed.text, cfg.fallback_answer)
    grounding = focus = None
    reasons: list[str] = []
    if passages and not abstained:
        texts = [p["text"] for p in passages]
        grounding = grounding_score(parsed.text, texts, cfg.grounding_word_overlap)
        focus = answer_focus(parsed.text, texts, state["question"], question_similarities(components, cfg))
        unknown = [n for n in cited_sources(parsed.text) if n > len(passages)]
        if unknown:
            reasons.append(f"unknown_citation:{unknown}")
            grounding = 0.0
    report = quality_score(parsed.text, state["question"], cfg, grounding, focus)
    reasons.extend(report.deductions)
    log.info(
        "attempt=%d strategy=%s parse_layer=%s quality=%.2f grounding=%s focus=%s abstained=%s deductions=%s",
        state.get("attempt", 0), state.get("strategy"), parsed.layer, report.score,
        None if grounding is None else round(grounding, 2), focus, abstained, report.deductions,
    )
    candidate = {
        "answer": parsed.text,
        "quality": report.score,
        "grounding_score": grounding,
        "abstained": abstained,
        "deductions": report.deductions,
        "parse_layer": parsed.layer,
    }
    best = state.get("best")
    if not abstained and (best is None or best.get("abstained") or report.score > best["quality"]):
        best = candidate
    elif best is None:
        best = candidate
    return {**candidate, "best": best, "reasons": reasons}


def next_step(state: AnswerState, config: RunnableConfig) -> str:
    """Accept, retry with the next strategy, or give up to finalize."""
    cfg = Configuration.from_runnable_config(config)
    if state.get("error"):
        return "finalize_answer"
    accepted = state.get("quality", 0.0) >= cfg.quality_threshold and not state.get("abstained")
    if accepted or state.get("attempt", 0) >= cfg.max_attempts:
        return "finalize_answer"
    return "generate_answer"


def question_similarities(components: Components, cfg: Configuration):
    """Cosine similarity of the question to each sentence, with the configured embeddings."""
    embeddings = components.embedder(cfg)

    def similarities(question: str, sentences: list[str]) -> list[float]:
        question_vector = embeddings.embed_query(question)
        return [cosine(question_vector, vector) for vector in embeddings.embed_documents(sentences)]

    return similarities

