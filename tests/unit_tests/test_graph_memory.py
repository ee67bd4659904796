"""Conversation memory for library users: a graph built with a checkpointer (``memory=True`` for
Keel's MongoDB store, or any LangGraph one) brings back a thread's earlier turns; the exported
``graph`` that LangGraph Studio loads has none, since Studio brings its own. The README's
embedding example is run as written, with fakes in place of the model, retriever and MongoDB.
The real MongoDB checkpointer is in integration_tests/test_graph_memory_real.py."""

from __future__ import annotations

import re
from functools import partial

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import keel.graph
from keel.graph import chat_graph
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.langgraph_json import PROJECT_ROOT

FACT = "The clinic is open from 8 am to 6 pm on weekdays and from 9 am to 1 pm on Saturdays."
ANSWER = "<answer>The clinic is open from 8 am to 6 pm on weekdays [Source 1].</answer>"
# the second turn's own answer: the same answer again would answer the first question, not this one
SATURDAYS = "<answer>The clinic is open from 9 am to 1 pm on Saturdays [Source 1].</answer>"
FIRST, SECOND = "When is the clinic open?", "And on Saturdays?"


def fake_parts() -> dict:
    return dict(chat_model=ScriptedChatModel(responses=[ANSWER] * 20, calls=[]), embeddings=KeywordEmbeddings(),
                retriever=StaticRetriever(documents=[passage_doc(FACT)]), tokenizer=WordTokenizer())


def two_turns(graph, model: ScriptedChatModel | None = None) -> tuple[dict, dict]:
    config = {"configurable": {"user_id": "alice", "thread_id": "conv-1"}}
    first = graph.invoke({"messages": [("human", FIRST)]}, config)
    if model is not None:
        model.responses, model.position = [SATURDAYS] * 20, 0
    return first, graph.invoke({"messages": [("human", SECOND)]}, config)


def prompt_texts(model: ScriptedChatModel) -> list[str]:
    """Everything the model was sent, call by call."""
    return ["\n".join(str(message.content) for message in call["messages"]) for call in model.calls]


def test_the_exported_graph_has_no_checkpointer_for_studio_brings_its_own():
    assert keel.graph.graph.checkpointer is None


def test_without_a_checkpointer_a_thread_keeps_nothing():
    parts = fake_parts()
    first, second = two_turns(chat_graph.build_graph(**parts))
    assert first["status"] == "success"
    assert [m.content for m in second["messages"] if m.type == "human"] == [SECOND]


def test_with_a_checkpointer_the_second_turn_sees_the_first():
    parts = fake_parts()
    first, second = two_turns(chat_graph.build_graph(**parts, checkpointer=InMemorySaver()), parts["chat_model"])
    assert first["status"] == "success" and second["status"] == "success"
    assert [m.content for m in second["messages"] if m.type == "human"] == [FIRST, SECOND]
    last_prompt = prompt_texts(parts["chat_model"])[-1]
    assert FIRST in last_prompt, "the model is shown the earlier turn"


def test_memory_true_is_keels_conversation_store(monkeypatch):
    made = []

    def conversation_store(cfg):
        made.append(cfg)
        return InMemorySaver()

    monkeypatch.setattr(chat_graph, "get_checkpointer", conversation_store)
    graph = chat_graph.build_graph(**fake_parts(), memory=True)
    assert len(made) == 1 and graph.checkpointer is not None
    assert type(made[0]).__name__ == "ConversationStoreSettings"


def test_memory_and_a_checkpointer_together_are_refused():
    with pytest.raises(ValueError, match="either checkpointer"):
        chat_graph.build_graph(**fake_parts(), checkpointer=InMemorySaver(), memory=True)


def readme_embedding_example() -> str:
    """The first Python block of the README's "Embedded in your LangChain app" section."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme.split("### Embedded in your LangChain app", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_embedding_example_keeps_memory(monkeypatch, capsys):
    parts = fake_parts()
    saver = InMemorySaver()
    # The example runs as written; only the parts behind it are fakes: the model, the retriever and
    # the store memory=True opens.
    monkeypatch.setattr(keel.graph, "build_graph", partial(chat_graph.build_graph, **parts))
    monkeypatch.setattr(chat_graph, "get_checkpointer", lambda cfg: saver)
    namespace: dict = {}
    exec(compile(readme_embedding_example(), "README.md", "exec"), namespace)
    assert capsys.readouterr().out.startswith("The clinic is open")
    second = namespace["second"]
    assert [m.content for m in second["messages"] if m.type == "human"] == [FIRST, SECOND]
    assert FIRST in prompt_texts(parts["chat_model"])[-1]
    assert saver.get_tuple(namespace["config"]) is not None, "the turns are saved in the store memory=True opened"
