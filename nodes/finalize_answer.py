"""finalize_answer: the accepted answer with status success, or the safe fallback with the status
that says why (the failed text is never shown). ``parse_layer`` is the chosen attempt's. An accepted answer
is put in the form a person can use (chains/answer_form.py: from its first statement, wrapped lines
joined, every sentence cited) and moderated before it is shown (moderate_answers): a harmful one
becomes the refusal, status not_safe."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.chains.answer_form import tidy_answer
from keel.chains.prompts import ERROR_MESSAGE
from keel.chains.refusals import refusal_message
from keel.checks.moderation import moderate_answer
from keel.checks.post_checks import (
    INDICATOR_PHRASE,
    LONGER_THAN_CONTEXT,
    NO_CITATIONS,
    UNKNOWN_CITATION,
)
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import AnswerState, AnswerStatus

UNGROUNDED_SENTENCES_DROPPED = "ungrounded_sentences_dropped"
OUTPUT_MODERATION_REASON = "output_moderation:"  # output_moderation:<category> on a refused answer
# Deductions that mean "the text is not supported by the documents" (post-generation
# checks and sentence grounding).
HALLUCINATION_CODES = frozenset({"ungrounded", NO_CITATIONS, UNKNOWN_CITATION, INDICATOR_PHRASE, LONGER_THAN_CONTEXT})


def finalize_answer(state: AnswerState, config: RunnableConfig, *, components: Components | None = None) -> dict:
    """The accepted attempt (or the fallback) as the subgraph's answer; moderated first where the
    deployment moderates answers."""
    cfg = Configuration.from_runnable_config(config)
    result = _finalized(state, cfg)
    if components is not None and cfg.moderate_answers and result["status"] == AnswerStatus.SUCCESS.value:
        return _moderated(result, state, cfg, components)
    return result


def _moderated(result: dict, state: AnswerState, cfg: Configuration, components: Components) -> dict:
    """Output moderation: an accepted answer the moderator judges harmful is never shown; the turn
    becomes the refusal, in the question's language, with status not_safe."""
    verdict = moderate_answer(components.moderation(cfg), state.get("question", ""), result["answer"])
    if verdict.safe:
        return result
    return {**result, "answer": refusal_message(verdict.category, state.get("language", cfg.default_language)),
            "status": AnswerStatus.NOT_SAFE.value, "sections": None,
            "reasons": [*result.get("reasons", []), f"{OUTPUT_MODERATION_REASON}{verdict.category}"]}


def _finalized(state: AnswerState, cfg: Configuration) -> dict:
    if state.get("error"):
        # the reason code names the endpoint; the exception's text stays in the log
        return {
            "answer": ERROR_MESSAGE,
            "status": AnswerStatus.ERROR.value,
            "reasons": list(dict.fromkeys([*state.get("reasons", []), "model_error", state["error"]])),
        }
    best = state.get("best") or {}
    if best and not best.get("abstained") and best.get("quality", 0.0) >= cfg.quality_threshold:
        answer = best["answer"] if best.get("sections") else tidy_answer(best["answer"], state.get("passages", []),
                                                                        state.get("question", ""))
        return {"answer": answer, "status": AnswerStatus.SUCCESS.value, "quality": best["quality"],
                "grounding_score": best.get("grounding_score"), "parse_layer": best.get("parse_layer", "raw"),
                "sections": best.get("sections"), "reasons": [*sorted(best.get("deductions", {})), *_dropped(best)]}
    if not best or best.get("abstained"):
        status = AnswerStatus.INSUFFICIENT_CONTEXT
    elif any(code.split(":")[0] in HALLUCINATION_CODES for code in best.get("deductions", {})):
        status = AnswerStatus.HALLUCINATION_DETECTED
    else:
        status = AnswerStatus.LOW_CONFIDENCE
    return {
        "answer": cfg.fallback_answer,
        "status": status.value,
        "quality": best.get("quality", 0.0),
        "grounding_score": best.get("grounding_score"),
        "parse_layer": best.get("parse_layer", "raw"),
        "sections": None,
        "reasons": sorted(set(state.get("reasons", [])) | set(best.get("deductions", {}))),
    }


def _dropped(best: dict) -> list[str]:
    count = best.get("dropped_sentences") or 0
    return [f"{UNGROUNDED_SENTENCES_DROPPED}:{count}"] if count else []
