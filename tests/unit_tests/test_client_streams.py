"""Whoever streams a turn sees what a user may see: the checked answer, its sources and its public
status, never a draft a check rejected, the system prompt, the model's name or the loop's timings:
embedded (every standard stream mode, subgraphs too) and served (every LangServe route). Tracing
still sees every run, the rejected draft included."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from keel.chains.prompts import BASE_SYSTEM_PROMPT
from keel.core.configuration import Configuration
from keel.graph import build_graph
from keel.server.app import create_app
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

FACTS = [
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    "The lighthouse lamp can be seen from 22 nautical miles away.",
]
QUESTION = "Who built the Varden lighthouse?"
REJECTED = "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>"
ACCEPTED = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"
INPUT = {"messages": [{"type": "human", "content": QUESTION}]}
# what only the turn's inside holds: the rejected draft, the system prompt, the model, the loop's state
INSIDE = ("Eiffel", BASE_SYSTEM_PROMPT[:40], Configuration().chat_model, "generation_s", "generate_answer",
          "validate_answer", "parse_error", "checks_s")


def keel_graph():
    model = ScriptedChatModel(responses=[REJECTED, ACCEPTED], chunk_chars=3)
    docs = [passage_doc(text, page=n, doc_id="doc-1") for n, text in enumerate(FACTS, 1)]
    return build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                       tokenizer=WordTokenizer())


def inside_of(value) -> list[str]:
    text = repr(value)
    return [secret for secret in INSIDE if secret in text]


@pytest.mark.parametrize("mode", ["values", "updates", "messages"])
@pytest.mark.parametrize("subgraphs", [False, True])
def test_embedded_stream_modes_show_no_inside(mode, subgraphs):
    chunks = list(keel_graph().stream(INPUT, stream_mode=mode, subgraphs=subgraphs))
    assert chunks and inside_of(chunks) == []
    assert "Mara Holt" in repr(chunks)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_embedded_events_are_the_graphs_run_and_the_answer(version):
    async def collect():
        return [event async for event in keel_graph().astream_events(INPUT, version=version)]

    events = asyncio.run(collect())
    assert inside_of(events) == []
    assert {event["name"] for event in events} == {"keel", "keel_answer"}
    streamed = "".join(e["data"]["chunk"].content for e in events if e["event"] == "on_chat_model_stream")
    assert streamed.startswith("The Varden lighthouse was built in 1874") and "[Source 1]" in streamed
    assert events[-1]["event"] == "on_chain_end" and "Mara Holt" in repr(events[-1]["data"]["output"])


def test_embedded_run_log_streams_the_answer_then_its_sources():
    async def collect(diff):
        return [item async for item in keel_graph().astream_log(INPUT, diff=diff)]

    patches = asyncio.run(collect(True))
    assert inside_of(patches) == []
    logged = {op["path"].split("/")[2] for patch in patches for op in patch.ops if op["path"].startswith("/logs/")}
    assert logged == {"keel_answer"}
    final = asyncio.run(collect(False))[-1].state
    shown = "".join(chunk.content for chunk in final["streamed_output"])
    turn = final["final_output"]["single_doc_answer"]  # a compiled StateGraph streams its updates
    assert shown.startswith(turn["answer"]) and shown.endswith(turn["sources_markdown"].replace("**", ""))
    assert "handbook.pdf" in turn["sources_markdown"]


def test_a_refusal_before_the_answer_loop_is_still_the_logs_streamed_output():
    async def collect():
        return [item async for item in keel_graph().astream_log({"messages": [{"type": "human", "content": " "}]},
                                                                 diff=False)]

    final = asyncio.run(collect())[-1].state
    refusal = final["final_output"]["not_safe"]["answer"]
    assert refusal and "".join(chunk.content for chunk in final["streamed_output"]) == refusal


def test_tracing_still_sees_every_run_the_rejected_draft_included():
    class Tracer(BaseCallbackHandler):
        """A tracer's view: every run's name and output."""

        def __init__(self):
            self.names, self.outputs = set(), []

        def on_chain_start(self, serialized, inputs, *, name=None, **kwargs):
            self.names.add(name)

        def on_chat_model_start(self, serialized, messages, *, name=None, **kwargs):
            self.names.add(name)

        def on_chain_end(self, outputs, **kwargs):
            self.outputs.append(repr(outputs))

    tracer = Tracer()
    result = keel_graph().invoke(INPUT, {"callbacks": [tracer]})
    assert "Mara Holt" in result["answer"]
    assert {"generate_answer", "validate_answer", "finalize_answer", "keel_answer"} <= tracer.names
    assert any("Eiffel" in output for output in tracer.outputs)


def test_served_routes_show_no_inside_and_the_playground_gets_the_answer_and_sources():
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    app = create_app(graph=keel_graph(), cfg=Configuration(), store=object(), api_keys=api_keys, owners=owners)
    from fastapi.testclient import TestClient

    body = {"input": INPUT, "config": {"configurable": {"user_id": "alice"}}}
    for route in ("/chat/invoke", "/chat/stream", "/chat/stream_log", "/chat/stream_events"):
        client = TestClient(app, headers=bearer(keys["alice"]))
        response = client.post(route, json=body)
        assert response.status_code == 200, (route, response.text)
        assert inside_of(response.text) == [], route
        assert "Mara Holt" in response.text, route
    client = TestClient(app, headers=bearer(keys["alice"]))
    log = client.post("/chat/stream_log", json=body).text
    streamed = []
    for block in log.split("\r\n\r\n"):
        for line in block.splitlines():
            if line.startswith("data: ") and line != "data: ":
                for op in json.loads(line[6:]).get("ops", []):
                    if op["path"] == "/streamed_output/-":
                        streamed.append(op["value"]["content"])
    shown = "".join(streamed)
    assert shown.startswith("The Varden lighthouse was built in 1874") and shown.count("handbook.pdf") == 1
