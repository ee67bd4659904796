"""single_doc_answer: answer from the one relevant document's passages."""

from __future__ import annotations

from langchain_core.runnables import Runnable, RunnableConfig

from keel.components import Components
from keel.core.state import KeelState, Route
from keel.nodes.answering import run_answer_graph


def single_doc_answer(state: KeelState, config: RunnableConfig, *, components: Components, answer_graph: Runnable) -> dict:
    """Answer from the one relevant document's passages, found by route_query."""
    passages = list(state.get("passages", []))
    return run_answer_graph(state, config, components, answer_graph, passages, Route.SINGLE_DOC)
