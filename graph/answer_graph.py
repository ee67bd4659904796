"""The answer subgraph every answering node (single_doc, multi_doc, pretrained_corpus) runs:

    START → generate_answer → validate_answer ─┬─ quality >= quality_threshold ──────→ finalize_answer → END
                  ↑                            ├─ attempt == max_attempts (3) ───────→ finalize_answer
                  └──── retry, next strategy ──┘  (a model error also goes straight to finalize)

generate_answer (one attempt; chains/generation.py)
    strategy by attempt: 1 grounded (the enhanced prompt: critical rules + few-shot examples),
    2 strict (stricter rules, retry_temperature, half the passages), ... the last attempt
    extractive (the context sentences closest to the question; no model call).
    stream the model (early-EOS prevention when eos_prevention is on) → parse with the five
    layers of keel/checks/parser.py → while the answer is cut off (keel/checks/completeness.py): continuation in chunks of
    50% of max_new_tokens, at most max_continuations and 5x max_new_tokens in total, each one
    checked while streaming (every 30 chunks) and when done (relevance, patterns, language,
    repetition, the structural plan), deduplicated and stitched on; an off-topic one is dropped
    and the answer reverts to the last valid text.
    custom stream events: keel.attempt, keel.token (filtered text), keel.continuation (the
    "*[Generating continuation answer...]*" indicator, never part of the answer), keel.continuation_dropped.
validate_answer
    quality score (1.0 minus keel/checks/answer_checks.py's deductions, ungrounded and off_focus too), best attempt kept,
    one structured telemetry record per attempt (logger keel.answer, record.keel_telemetry).
finalize_answer
    the best attempt with status success, or the configured fallback with the status that says
    why (insufficient_context, hallucination_detected, low_confidence, error): failed text is never shown.
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from keel.components import Components
from keel.core.state import AnswerState
from keel.nodes.finalize_answer import finalize_answer
from keel.nodes.generate_answer import generate_answer
from keel.nodes.validate_answer import next_step, validate_answer


def build_answer_graph(components: Components):
    """The answer subgraph every answering node runs: generate, validate, and retry until the
    answer's quality passes or the attempts run out, then finalize."""
    builder = StateGraph(AnswerState)
    builder.add_node("generate_answer", partial(generate_answer, components=components))
    builder.add_node("validate_answer", partial(validate_answer, components=components))
    builder.add_node("finalize_answer", partial(finalize_answer, components=components))

    builder.add_edge(START, "generate_answer")
    builder.add_edge("generate_answer", "validate_answer")
    builder.add_conditional_edges("validate_answer", next_step, ["generate_answer", "finalize_answer"])
    builder.add_edge("finalize_answer", END)
    return builder.compile(name="answer")
