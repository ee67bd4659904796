"""finalize_answer: the accepted answer with status success, or the safe fallback with the status
that says why (the failed text is never shown). ``parse_layer`` is the chosen attempt's."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.checks.post_checks import INDICATOR_PHRASE, LONGER_THAN_CONTEXT, NO_CITATIONS, UNKNOWN_CITATION
from keel.chains.prompts import ERROR_MESSAGE
from keel.core.configuration import Configuration
from keel.core.state import AnswerState, AnswerStatus

UNGROUNDED_SENTENCES_DROPPED = "ungrounded_sentences_dropped"
# Deductions that mean "the text is not supported by the documents" (post-generation
# checks and sentence grounding).
HALLUCINATION_CODES = frozenset({"ungrounded", NO_CITATIONS, UNKNOWN_CITATION, INDICATOR_PHRASE, LONGER_THAN_CONTEXT})


def finalize_answer(state: AnswerState, config: RunnableConfig) -> dict:
    cfg = Configuration.from_runnable_config(config)
    if state.get("error"):
        # the reason code names the endpoint; the exception's text stays in the log
        return {
            "answer": ERROR_MESSAGE,
            "status": AnswerStatus.ERROR.value,
            "reasons": list(dict.fromkeys([*state.get("reasons", []), "model_error", state["error"]])),
        }
    best = state.get("best") or {}
    if best and not best.get("abstained") and best.get("quality", 0.0) >= cfg.quality_threshold:
        return {"answer": best["answer"], "status": AnswerStatus.SUCCESS.value, "quality": best["quality"],
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
