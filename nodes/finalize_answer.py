"""finalize_answer: the accepted answer with status success, or the safe fallback with the status
that says why (the failed text is never shown). ``parse_layer`` is the chosen attempt's."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from chains.prompts import ERROR_MESSAGE
from graph.configuration import Configuration
from graph.state import AnswerState, AnswerStatus


def finalize_answer(state: AnswerState, config: RunnableConfig) -> dict:
    cfg = Configuration.from_runnable_config(config)
    if state.get("error"):
        return {
            "answer": ERROR_MESSAGE.format(error=state["error"]),
            "status": AnswerStatus.ERROR.value,
            "reasons": [*state.get("reasons", []), "model_error"],
        }
    best = state.get("best") or {}
    if best and not best.get("abstained") and best.get("quality", 0.0) >= cfg.quality_threshold:
        return {"answer": best["answer"], "status": AnswerStatus.SUCCESS.value, "quality": best["quality"],
                "grounding_score": best.get("grounding_score"), "parse_layer": best.get("parse_layer", "raw")}
    if not best or best.get("abstained"):
        status = AnswerStatus.INSUFFICIENT_CONTEXT
    elif "ungrounded" in best.get("deductions", {}):
        status = AnswerStatus.HALLUCINATION_DETECTED
    else:
        status = AnswerStatus.LOW_CONFIDENCE
    return {
        "answer": cfg.fallback_answer,
        "status": status.value,
        "quality": best.get("quality", 0.0),
        "grounding_score": best.get("grounding_score"),
        "parse_layer": best.get("parse_layer", "raw"),
        "reasons": sorted(set(state.get("reasons", [])) | set(best.get("deductions", {}))),
    }
