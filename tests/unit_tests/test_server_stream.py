"""The LangServe app never lets a reasoning marker reach a client, through any of its routes
(stream_log, stream_events and the playground included), and /chat/events carries the answer
loop's filtered events (the continuation indicator as its own event, retractions of rejected text,
then the checked answer)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from keel.chains.prompts import CONTINUATION_INDICATOR
from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.server.app import create_app
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

FACTS = [
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    "The lighthouse lamp can be seen from 22 nautical miles away.",
]
QUESTION = "Who built the Varden lighthouse?"
THINKING = "<thinking>Source 1 names the builder; check the year.</thinking>"
MARKERS = ("<thinking", "</thinking", "Source 1 names the builder", "<answer", "</answer", "<|im_end|>", "<|im")
BODY = {"input": {"messages": [{"type": "human", "content": QUESTION}]}, "config": {"configurable": {"user_id": "alice"}}}


def client_for(responses, chunk_chars=3) -> TestClient:
    model = ScriptedChatModel(responses=responses, chunk_chars=chunk_chars)
    docs = [passage_doc(text, page=n, doc_id="doc-1") for n, text in enumerate(FACTS, 1)]
    graph = build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                        tokenizer=WordTokenizer())
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    app = create_app(graph=graph, cfg=Configuration(), store=object(), api_keys=api_keys, owners=owners)
    return TestClient(app, headers=bearer(keys["alice"]))


CUT_THEN_CONTINUED = [
    f"{THINKING}<answer>The Varden lighthouse was built in 1874 by",
    "the engineer Mara Holt [Source 1].</answer><|im_end|>",
]


def sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((lines.get("event", ""), json.loads(lines.get("data", "null"))))
    return events


def test_no_marker_reaches_a_client_through_any_route():
    for route in ("/chat/invoke", "/chat/stream", "/chat/events", "/chat/stream_log", "/chat/stream_events"):
        client = client_for(CUT_THEN_CONTINUED)
        response = client.post(route, json=BODY)
        assert response.status_code == 200, (route, response.text)
        for marker in MARKERS:
            assert marker not in response.text, (route, marker)
        assert "Mara Holt" in response.text, route
    batch = client_for(CUT_THEN_CONTINUED).post("/chat/batch", json={"inputs": [BODY["input"]]})
    assert batch.status_code == 200 and not [m for m in MARKERS if m in batch.text]


def test_the_playground_page_is_served():
    assert client_for(CUT_THEN_CONTINUED).get("/chat/playground/").status_code == 200


def test_events_route_streams_filtered_tokens_the_indicator_as_its_own_event_and_the_final_answer():
    response = client_for(CUT_THEN_CONTINUED).post("/chat/events", json=BODY)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds[:2] == ["keel.progress", "keel.attempt"] and kinds[-1] == "keel.final"
    found = events[0][1]  # what the search found, before the checks and the model run
    assert found["stage"] == "found" and found["passages"] >= 1 and found["sources"]
    indicator = events[kinds.index("keel.continuation")][1]
    assert indicator["text"] == CONTINUATION_INDICATOR and indicator["attempt"] == 1
    streamed = "".join(data["text"] for kind, data in events if kind == "keel.token")
    assert "Mara Holt" in streamed and CONTINUATION_INDICATOR not in streamed
    final = events[-1][1]
    assert final["status"] == "success" and final["continuations"] == 1
    assert "Mara Holt" in final["answer"] and CONTINUATION_INDICATOR not in final["answer"]
    assert final["conversation_id"]  # a request without a thread_id starts a conversation


def test_events_route_retracts_the_draft_of_a_rejected_attempt():
    client = client_for([
        f"{THINKING}<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>",
        "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>",
    ])
    events = sse(client.post("/chat/events", json=BODY).text)
    kinds = [kind for kind, _ in events]
    discard = events[kinds.index("keel.discard")][1]
    assert discard["attempt"] == 1 and discard["reason"]
    # the discard comes before the second attempt's first token, after the Eiffel draft was streamed
    first_tokens = "".join(d["text"] for k, d in events[: kinds.index("keel.discard")] if k == "keel.token")
    assert "Eiffel" in first_tokens
    assert kinds.index("keel.discard") < kinds.index("keel.attempt", kinds.index("keel.attempt") + 1)
    final = events[-1][1]
    assert final["status"] == "success" and "Eiffel" not in final["answer"] and "Mara Holt" in final["answer"]


def test_model_calls_are_detached_from_exactly_the_handlers_that_stream_to_a_client():
    """astream_log (/stream_log), astream_events (/stream_events) and LangGraph's messages mode hand
    tokens to a client through handlers known only by the two methods a run's streamed output is
    passed through (tap_output_iter, tap_output_aiter): if finding them stops working, raw model
    tokens reach those routes. Every other callback (tracing, a caller's own) stays on the model call."""
    import asyncio
    from typing import TypedDict

    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph

    from keel.chains.generation import private_model_config, streams_to_client

    class Recorder(BaseCallbackHandler):
        """A caller's own callback: not a client stream."""

    seen, kept = [], []

    def model_call(value, config):
        seen.extend(config["callbacks"].handlers)
        kept.extend(private_model_config(config)["callbacks"].handlers)
        return value

    class State(TypedDict):
        text: str

    graph = StateGraph(State)
    graph.add_node("answer", RunnableLambda(lambda state, config: {"text": model_call(state["text"], config)}))
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    compiled = graph.compile()
    config = {"callbacks": [Recorder()]}

    async def drain() -> None:
        async for _ in RunnableLambda(model_call).astream_log("q", config):
            pass
        async for _ in RunnableLambda(model_call).astream_events("q", config, version="v2"):
            pass

    asyncio.run(drain())
    list(compiled.stream({"text": "q"}, config, stream_mode="messages"))

    streaming = {type(handler).__name__ for handler in seen if streams_to_client(handler)}
    assert {"LogStreamCallbackHandler", "_AstreamEventsCallbackHandler", "StreamMessagesHandler"} <= streaming
    assert not [handler for handler in kept if streams_to_client(handler)]
    assert [type(handler) for handler in kept].count(Recorder) == 3  # once per run, kept every time
    from langchain_core.tracers.stdout import ConsoleCallbackHandler

    assert not streams_to_client(ConsoleCallbackHandler())  # a tracer sees every run but streams to nobody
