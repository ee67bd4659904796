"""LangChain's standard streaming shows the checked answer, and only it.

``graph.stream(..., stream_mode="messages")`` (with and without subgraphs) and
``graph.astream_events(..., version="v2")`` carry the turn's final answer as chat-model chunks,
word by word, under the final message's id, so their concatenation is exactly the answer and
LangGraph does not send the whole message again. A token there cannot be taken back, so no raw
model token, reasoning marker or draft a check rejected may appear: the scripted model below
writes reasoning markers and a first attempt that the checks discard.
"""

from __future__ import annotations

import ast
import asyncio
import json
import uuid

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, AIMessageChunk

from keel.chains.answer_relay import ANSWER_RUN_NAME, AnswerRelay, relay_answer, word_pieces
from keel.core.configuration import Configuration
from keel.graph import build_graph
from keel.server.app import create_app
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners
from tests.unit_tests.test_import_direction import installed_modules

FACTS = [
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    "The lighthouse lamp can be seen from 22 nautical miles away.",
]
QUESTION = "Who built the Varden lighthouse?"
THINKING = "<thinking>Source 1 names the builder; check the year.</thinking>"
# the first attempt is off the documents (rejected and retried), the second is the answer
DISCARDED_THEN_ACCEPTED = [
    f"{THINKING}<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>",
    f"{THINKING}<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>",
]
NEVER_SHOWN = ("<thinking", "</thinking", "Source 1 names the builder", "<answer", "</answer", "Eiffel", "Paris")


def keel_graph(responses=DISCARDED_THEN_ACCEPTED):
    model = ScriptedChatModel(responses=list(responses), chunk_chars=3)
    docs = [passage_doc(text, page=n, doc_id="doc-1") for n, text in enumerate(FACTS, 1)]
    return build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                       tokenizer=WordTokenizer())


def ask(question: str = QUESTION, **configurable) -> tuple[dict, dict]:
    return {"messages": [("human", question)]}, {"configurable": {"user_id": "alice", **configurable}}


def streamed_messages(graph, question: str = QUESTION, subgraphs: bool = False, **configurable):
    """(every message the messages mode sent, the turn's final state)."""
    graph_input, config = ask(question, **configurable)
    messages, final = [], {}
    for namespace, mode, payload in graph.stream(graph_input, config, stream_mode=["messages", "values"],
                                                 subgraphs=True) if subgraphs else (
            ((), mode, payload) for mode, payload in graph.stream(graph_input, config,
                                                                  stream_mode=["messages", "values"])):
        if mode == "messages":
            messages.append(payload[0])
        elif not namespace:
            final = payload
    return messages, final


@pytest.mark.parametrize("subgraphs", [False, True])
def test_messages_mode_streams_the_checked_answer_in_chunks_under_the_final_messages_id(subgraphs):
    messages, final = streamed_messages(keel_graph(), subgraphs=subgraphs)
    assert final["status"] == "success" and final["attempts"] == 2 and "Mara Holt" in final["answer"]
    answer_message = final["messages"][-1]
    streamed = [m for m in messages if isinstance(m, AIMessage)]
    # chunks only: the whole final message is not sent again after them
    assert streamed and all(isinstance(m, AIMessageChunk) for m in streamed)
    assert "".join(m.content for m in streamed) == final["answer"] == answer_message.content
    assert {m.id for m in streamed} == {answer_message.id}
    assert len([m for m in streamed if m.content]) == len(final["answer"].split())  # word by word
    for text in NEVER_SHOWN:
        assert text not in "".join(str(m.content) for m in messages), text


def test_astream_events_has_chat_model_stream_events_for_the_checked_answer_only():
    graph_input, config = ask()

    async def collect() -> list[dict]:
        return [event async for event in keel_graph().astream_events(graph_input, config, version="v2")]

    events = asyncio.run(collect())
    streamed = [event for event in events if event["event"] == "on_chat_model_stream"]
    assert streamed and {event["name"] for event in streamed} == {ANSWER_RUN_NAME}
    final = next(e for e in reversed(events) if e["event"] == "on_chain_end" and e["name"] == "keel")["data"]["output"]
    assert final["status"] == "success"
    assert "".join(event["data"]["chunk"].content for event in streamed) == final["answer"]
    assert {event["data"]["chunk"].id for event in streamed} == {final["messages"][-1].id}
    # the raw model calls start and end, as tracing sees them, but stream nothing to the client
    shown = "".join(str(event["data"]["chunk"].content) for event in streamed)
    for text in NEVER_SHOWN:
        assert text not in shown, text


@pytest.mark.parametrize(
    ("question", "configurable", "status"),
    [
        ("Who painted the Varden lighthouse in Tartu?", {}, "insufficient_context"),  # a name in no passage
        ("", {}, "error"),  # an empty question: "Please ask a question."
        (QUESTION, {"max_input_tokens": 2}, "exceeded_token_budget"),
        (QUESTION, {"blocked_terms": ("lighthouse",)}, "not_safe"),
    ],
)
def test_every_route_streams_its_final_message(question, configurable, status):
    messages, final = streamed_messages(keel_graph(), question, **configurable)
    assert final["status"] == status
    streamed = [m for m in messages if isinstance(m, AIMessage)]
    assert streamed and all(isinstance(m, AIMessageChunk) for m in streamed)
    assert "".join(m.content for m in streamed) == final["answer"] == final["messages"][-1].content
    assert {m.id for m in streamed} == {final["messages"][-1].id}


def test_the_servers_stream_events_route_streams_the_relayed_answer_and_no_raw_token():
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    app = create_app(graph=keel_graph(), cfg=Configuration(), store=object(), api_keys=api_keys, owners=owners)
    client = TestClient(app, headers=bearer(keys["alice"]))
    body = {"input": {"messages": [{"type": "human", "content": QUESTION}]}, "config": {"configurable": {}}}
    response = client.post("/chat/stream_events", json=body)
    assert response.status_code == 200
    events = [json.loads(line[len("data: "):]) for line in response.text.splitlines() if line.startswith("data: {")]
    streamed = [e for e in events if e.get("event") == "on_chat_model_stream"]
    assert streamed and {e["name"] for e in streamed} == {ANSWER_RUN_NAME}
    shown = "".join(e["data"]["chunk"]["content"] for e in streamed)
    assert "Mara Holt" in shown
    for text in NEVER_SHOWN:
        assert text not in shown, text
    # the nodes' inputs and outputs are there too (attempts included), but never a raw token
    for marker in NEVER_SHOWN[:5]:
        assert marker not in response.text, marker


@pytest.mark.parametrize("text", ["", "One.", "  Two  words \n\n- a list\n  item [Source 1].  ", "a\tb"])
@pytest.mark.parametrize("words", [1, 2, 5])
def test_word_pieces_rebuild_the_text_exactly(text, words):
    pieces = word_pieces(text, words)
    assert "".join(pieces) == text
    assert all(len(piece.split()) <= words for piece in pieces)


def test_the_relay_is_a_chat_model_that_says_the_message_it_is_given():
    message = AIMessage("Open from 9 to 5 [Source 1].", id="answer-1", additional_kwargs={"keel": {"status": "success"}})
    chunks = list(AnswerRelay(words_per_chunk=2).stream([message]))
    assert [c.content for c in chunks if c.content] == ["Open from", " 9 to", " 5 [Source", " 1]."]
    assert {c.id for c in chunks} == {"answer-1"}
    said = AnswerRelay().invoke([message])
    assert (said.content, said.id, said.additional_kwargs) == (message.content, "answer-1", message.additional_kwargs)
    # a message without an id gets one, so its chunks and the node's message match
    relayed = relay_answer(AIMessage("Hello."), {"configurable": {}})
    assert relayed.id and uuid.UUID(relayed.id.removeprefix("keel-answer-"))


def test_the_answer_chunk_size_is_a_setting():
    messages, final = streamed_messages(keel_graph(), answer_stream_words=3)
    streamed = [m.content for m in messages if isinstance(m, AIMessageChunk) and m.content]
    assert "".join(streamed) == final["answer"] and len(streamed) == -(-len(final["answer"].split()) // 3)


def test_no_module_imports_a_private_langchain_or_langgraph_name():
    """Private modules and names (a part starting with "_") change without notice between releases."""
    private = []
    for module, path in installed_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [f"{node.module or ''}.{alias.name}" for alias in node.names] if isinstance(
                node, ast.ImportFrom) else ([alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                parts = name.split(".")
                if parts[0].startswith(("langchain", "langgraph", "langserve")) and any(
                        p.startswith("_") and not p.startswith("__") for p in parts):
                    private.append(f"{module}: {name}")
    assert "keel.chains.generation" in installed_modules()  # the folders at the top are read too
    assert private == []
