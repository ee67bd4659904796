"""A served turn is saved whole or not at all: while it runs, the conversation's checkpoint is the
one before the question, so a replica killed mid-answer leaves nothing half-saved for the retry on
another replica to continue from."""

from __future__ import annotations

import threading
import time
from typing import Annotated, TypedDict

from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from keel.server.served_graph import serve_graph


class Turn(TypedDict):
    messages: Annotated[list, add_messages]


def slow_graph(release: threading.Event):
    def check(state):
        return {}

    def answer(state):
        release.wait(10)
        return {"messages": [("ai", f"answer to {state['messages'][-1].content}")]}

    builder = StateGraph(Turn)
    builder.add_node("check", check)
    builder.add_node("answer", answer)
    builder.add_edge(START, "check")
    builder.add_edge("check", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=InMemorySaver())


def stored(graph, config) -> list[str]:
    return [m.content for m in graph.get_state(config).values.get("messages", [])]


def test_a_turn_in_progress_is_not_in_the_conversation_until_it_ends():
    release = threading.Event()
    graph = slow_graph(release)
    served = serve_graph(graph)
    config = {"configurable": {"thread_id": "t-1"}}
    release.set()
    served.invoke({"messages": [("human", "q1")]}, config)
    release.clear()
    running = threading.Thread(target=served.invoke, args=({"messages": [("human", "q2")]}, config))
    running.start()
    time.sleep(0.3)  # the turn has passed its first step and waits in the answer
    assert stored(graph, config) == ["q1", "answer to q1"]  # nothing of q2 yet: a kill here loses the turn whole
    release.set()
    running.join(10)
    assert stored(graph, config) == ["q1", "answer to q1", "q2", "answer to q2"]


def test_a_graph_without_memory_is_served_as_it_is():
    assert serve_graph(RunnableLambda(lambda x: x)).invoke({"a": 1}) == {"a": 1}
