"""validate_answer: score the attempt's answer (quality deductions plus grounding, focus, the
post-generation checks and the language match), keep the best attempt so far, and write one
structured telemetry record per attempt. Every failed check is a deduction, so a failing answer is
retried, and a reason code in the result."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from langchain_core.runnables import RunnableConfig

from keel.chains.answer_messages import shown_passages
from keel.checks.answer_checks import is_fallback, quality_score
from keel.checks.answer_fit import fit_reasons
from keel.checks.answer_topic import topic_relevance
from keel.checks.grounding import adds_claim, answer_focus, check_grounding
from keel.checks.language import clearly_other_language
from keel.checks.post_checks import post_generation_reasons
from keel.checks.repeated_answer import REPEATS_LAST_ANSWER, repeats_last_answer
from keel.components import Components, draft_writer
from keel.core.configuration import Configuration
from keel.core.state import AnswerState
from keel.core.text import parse_sections, with_section_citations, without_sentences

log = logging.getLogger("keel.answer")
TELEMETRY_EVENT = "answer_attempt"
LANGUAGE_MISMATCH = "language_mismatch"
RESTATES_QUESTION = "restates_question"  # no content word beyond the question's: answers nothing


def validate_answer(state: AnswerState, config: RunnableConfig, *, components: Components) -> dict:
    """Score the draft (grounding, citations, completeness, fit) and say whether it passes or why not."""
    cfg = Configuration.from_runnable_config(config)
    started = time.perf_counter()
    if state.get("error"):
        _telemetry(state, {"quality": 0.0, "deductions": {}, "error": state["error"]}, 0.0, cfg)
        return {"quality": 0.0, "reasons": [*state.get("reasons", []), "model_error"]}
    answer = state.get("draft", "")
    sections = parse_sections(answer) if cfg.answer_format == "sectioned" else None
    if sections:
        answer = with_section_citations(sections)  # the [ANSWER] part is what is shown and checked
    # Only what this attempt showed the model counts: [Source N] of a passage not shown is unknown.
    shown = shown_passages(state.get("strategy") or "", state.get("passages", []), cfg.strict_passage_fraction)
    abstained = is_fallback(answer, cfg.fallback_answer)
    grounding = focus = None
    dropped = 0
    extra: dict[str, float] = {}
    if shown and not abstained:
        texts = [p["text"] for p in shown]
        similarities = components.similarity(cfg)
        answer, report, dropped = _grounded_part(answer, texts, state, cfg, similarities, draft_writer(cfg, config))
        grounding = report.score
        if dropped and sections:
            sections = {**sections, "answer": answer}
        focus = answer_focus(answer, texts, state["question"], topic_relevance(similarities, cfg.topic_relevance_weight))
        extra.update({code: cfg.post_check_penalty for code in post_generation_reasons(answer, texts, cfg)})
        if not adds_claim(answer, state["question"]):
            extra[RESTATES_QUESTION] = cfg.post_check_penalty
        # Grounded is not enough: the answer must be of the asked type, about the asked entity.
        extra.update({code: cfg.answer_fit_penalty for code in fit_reasons(answer, state["question"], texts, cfg)})
        if repeats_last_answer(answer, state["question"], state.get("history") or []):
            extra[REPEATS_LAST_ANSWER] = cfg.answer_fit_penalty  # the last question's answer, not this one's
    expected = state.get("language") or cfg.default_language
    if cfg.enforce_language_match and not abstained:
        other = clearly_other_language(answer, expected, cfg)
        if other:
            extra[f"{LANGUAGE_MISMATCH}:{other}"] = cfg.language_mismatch_penalty
    report = quality_score(answer, state["question"], cfg, grounding, focus, extra)
    reasons = list(report.deductions)
    candidate = {
        "answer": answer,
        "quality": report.score,
        "grounding_score": grounding,
        "abstained": abstained,
        "deductions": report.deductions,
        "parse_layer": state.get("parse_layer", "raw"),
        "sections": sections,
        "dropped_sentences": dropped,
    }
    best = state.get("best")
    if not abstained and (best is None or best.get("abstained") or report.score > best["quality"]):
        best = candidate
    elif best is None:
        best = candidate
    _telemetry(state, {**candidate, "focus": focus}, time.perf_counter() - started, cfg)
    return {**candidate, "best": best, "reasons": reasons}


def _grounded_part(answer: str, texts: list[str], state: AnswerState, cfg: Configuration, similarities,
                   tell: Callable[[dict], None]):
    """The answer's grounding report, and, when it passes with some sentences unsupported and
    cfg.drop_ungrounded_sentences is on, the answer without those sentences (a streaming client is
    told with keel.revert): an accepted answer shows no sentence the documents do not support."""
    report = check_grounding(answer, texts, cfg, state["question"], similarities)
    unsupported = [v.sentence for v in report.sentences if not v.grounded]
    if not (cfg.drop_ungrounded_sentences and unsupported and report.passes(cfg.grounding_threshold)):
        return answer, report, 0
    trimmed = without_sentences(answer, unsupported)
    tell({"event": "keel.revert", "attempt": state.get("attempt", 0), "reason": "ungrounded_sentences",
                     "text": trimmed})
    return trimmed, check_grounding(trimmed, texts, cfg, state["question"], similarities), len(unsupported)


def _telemetry(state: AnswerState, verdict: dict, validation_s: float, cfg: Configuration) -> None:
    """One structured record per attempt, for monitoring retries and leaks: parse layer, quality, deductions,
    continuations, tokens and timings. The dict rides on the log record as ``keel_telemetry``."""
    timings = {**(state.get("timings") or {}), "validation_s": round(validation_s, 4)}
    accepted = verdict["quality"] >= cfg.quality_threshold and not verdict.get("abstained")
    record = {
        "event": TELEMETRY_EVENT,
        "attempt": state.get("attempt", 0),
        "strategy": state.get("strategy"),
        "model": state.get("model"),
        "parse_layer": state.get("parse_layer"),
        "parse_error": state.get("parse_error"),
        "quality": verdict["quality"],
        "deductions": verdict.get("deductions", {}),
        "grounding": None if verdict.get("grounding_score") is None else round(verdict["grounding_score"], 3),
        "focus": verdict.get("focus"),
        "abstained": bool(verdict.get("abstained")),
        "accepted": accepted,
        "continuations": state.get("attempt_continuations", 0),
        "stops": state.get("stops", []),
        "tokens": state.get("attempt_usage") or {},
        "timings": {k: round(float(v), 4) for k, v in timings.items()},
        "error": verdict.get("error"),
        "answer_preview": (verdict.get("answer") or "")[:300],
        "dropped_sentences": verdict.get("dropped_sentences", 0),
    }
    log.info("%s %s", TELEMETRY_EVENT, json.dumps(record, ensure_ascii=False), extra={"keel_telemetry": record})
    if not accepted and not record["error"]:
        # A retry is the answer loop doing its job: a detail of this answer, for whoever debugs it.
        log.debug("answer quality too low (%.2f, %s) on attempt %d; %s", record["quality"],
                  ",".join(record["deductions"]) or ("abstained" if record["abstained"] else "-"), record["attempt"],
                  "retrying with a new strategy" if record["attempt"] < cfg.max_attempts else "giving up")


def next_step(state: AnswerState, config: RunnableConfig) -> str:
    """Accept, retry with the next strategy, or give up to finalize."""
    cfg = Configuration.from_runnable_config(config)
    if state.get("error"):
        return "finalize_answer"
    accepted = state.get("quality", 0.0) >= cfg.quality_threshold and not state.get("abstained")
    if accepted or state.get("attempt", 0) >= cfg.max_attempts:
        return "finalize_answer"
    return "generate_answer"
