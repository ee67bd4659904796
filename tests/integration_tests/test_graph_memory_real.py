"""``build_graph(memory=True)`` on the real conversation store: the MongoDB checkpointer over the
embedded Mongo-wire server keeps a thread's turns, for the same graph and for a graph built later
(another process, as far as the store can tell). The model and the retriever are fakes: what is
under test is the memory."""

from __future__ import annotations

import uuid

from keel.graph import build_graph
from tests.unit_tests.test_graph_memory import FIRST, SECOND, fake_parts, prompt_texts


def test_a_second_turn_sees_the_first_in_keels_mongodb(mongodb_uri, monkeypatch):
    monkeypatch.setenv("MONGODB_URI", mongodb_uri)
    parts = fake_parts()
    chat = build_graph(**parts, memory=True)
    assert type(chat.checkpointer).__name__ == "ResilientCheckpointSaver"
    config = {"configurable": {"user_id": "alice", "thread_id": f"memory-{uuid.uuid4().hex[:10]}"}}

    first = chat.invoke({"messages": [("human", FIRST)]}, config)
    second = chat.invoke({"messages": [("human", SECOND)]}, config)
    assert first["status"] == "success"
    assert [m.content for m in second["messages"] if m.type == "human"] == [FIRST, SECOND]
    assert FIRST in prompt_texts(parts["chat_model"])[-1], "the model is shown the earlier turn"

    later = build_graph(**fake_parts(), memory=True)  # a new connection to the same store
    third = later.invoke({"messages": [("human", "Thanks!")]}, config)
    assert [m.content for m in third["messages"] if m.type == "human"] == [FIRST, SECOND, "Thanks!"]
