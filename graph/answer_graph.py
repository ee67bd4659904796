"""The answer subgraph every answering node runs:

    generate_answer → validate_answer → (quality >= threshold? or out of attempts?) → finalize_answer
                 ↑___________________________ retry with the next strategy ___|
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from graph.state import AnswerState
from nodes.components import Components
from nodes.finalize_answer import finalize_answer
from nodes.generate_answer import generate_answer
from nodes.validate_answer import next_step, validate_answer


def build_answer_graph(components: Components):
    builder = StateGraph(AnswerState)
    builder.add_node("generate_answer", partial(generate_answer, components=components))
    builder.add_node("validate_answer", partial(validate_answer, components=components))
    builder.add_node("finalize_answer", finalize_answer)

    builder.add_edge(START, "generate_answer")
    builder.add_edge("generate_answer", "validate_answer")
    builder.add_conditional_edges("validate_answer", next_step, ["generate_answer", "finalize_answer"])
    builder.add_edge("finalize_answer", END)
    return builder.compile(name="answer")
