"""pretrained_corpus_answer: no document holds the answer. In strict grounding mode (the default)
the user gets the "I don't know" fallback without a model call; in open mode the model answers
from general knowledge, marked as not from the documents."""

from __future__ import annotations

from langchain_core.runnables import Runnable, RunnableConfig

from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState, Route
from keel.nodes.answering import fallback_result, run_answer_graph, said
from keel.nodes.review_hold import held_for_review


def pretrained_corpus_answer(
    state: KeelState, config: RunnableConfig, *, components: Components, answer_graph: Runnable
) -> dict:
    """No document holds the answer: in strict grounding, say "I don't know"; in open mode, let the
    model answer from what it knows, marked as such."""
    cfg = Configuration.from_runnable_config(config)
    if cfg.grounding_mode == "open":
        return run_answer_graph(state, config, components, answer_graph, [], Route.PRETRAINED_CORPUS)
    turn = fallback_result(state, cfg, AnswerStatus.INSUFFICIENT_CONTEXT, Route.PRETRAINED_CORPUS, ["no_relevant_context"])
    return said(held_for_review(turn, state, cfg) or turn, config, state.get("image_note", ""))  # a reviewer may still write the answer
