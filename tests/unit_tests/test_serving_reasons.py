"""What a client of `keel serve` learns when the model is down: the reason code
(``model_unavailable``), never the endpoint's URL or a log file's path, on every route that returns
the graph's output or its inner steps; the detail is in the server log, and the library (what
`keel ask` reads) keeps it."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tracers.log_stream import RunLog, RunLogPatch
from langgraph.checkpoint.memory import InMemorySaver

from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.server.app import create_app
from keel.server.served_graph import ClientView
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

PRIVATE_HOST = "10.9.8.7"
FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
QUESTION = {"messages": [{"type": "human", "content": "Who built the Varden lighthouse?"}]}


class UnreachableModel(FakeListChatModel):
    """A chat model served from a private address that never answers."""

    llm: Any = None

    def _generate(self, *args, **kwargs):
        raise ConnectionError(f"connection refused by http://{PRIVATE_HOST}:8080")

    def _stream(self, *args, **kwargs):
        raise ConnectionError(f"connection refused by http://{PRIVATE_HOST}:8080")
        yield  # pragma: no cover


def down_graph():
    model = UnreachableModel(responses=["unused"], llm=SimpleNamespace(endpoint_url=f"http://{PRIVATE_HOST}:8080"))
    return build_graph(chat_model=model, embeddings=BagOfWordsEmbeddings(), tokenizer=WordTokenizer(),
                       retriever=StaticRetriever(documents=[passage_doc(FACT)]), checkpointer=InMemorySaver())


@pytest.fixture(scope="module")
def served():
    api_keys, keys, owners = keys_and_owners()
    app = create_app(graph=down_graph(), cfg=Configuration(rate_limit_burst=1000), store=object(),
                     api_keys=api_keys, owners=owners)
    return TestClient(app), keys


def test_the_library_keeps_the_endpoint_for_the_cli():
    result = down_graph().invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]},
                                 {"configurable": {"thread_id": "lib-1"}})
    assert result["status"] == "error"
    assert f"model_unavailable:http://{PRIVATE_HOST}:8080" in result["reasons"]


@pytest.mark.parametrize("route, body", [
    ("/chat/invoke", {"input": QUESTION}),
    ("/chat/batch", {"inputs": [QUESTION]}),
    ("/chat/stream", {"input": QUESTION}),
    ("/chat/stream_log", {"input": QUESTION}),
    ("/chat/stream_events", {"input": QUESTION}),
    ("/chat/events", {"input": QUESTION}),
])
def test_over_http_the_reason_code_is_there_and_the_endpoint_is_not(served, caplog, route, body):
    client, keys = served
    with caplog.at_level(logging.INFO, logger="keel.server"):
        response = client.post(route, json=body, headers=bearer(keys["alice"]))
    assert response.status_code == 200, response.text
    assert PRIVATE_HOST not in response.text
    assert '"model_unavailable"' in response.text and '"error"' in response.text
    assert f"model_unavailable:http://{PRIVATE_HOST}:8080" in caplog.text  # the detail is in the server log


def test_the_final_answer_over_invoke_has_status_error_and_the_bare_code(served):
    client, keys = served
    output = client.post("/chat/invoke", json={"input": QUESTION}, headers=bearer(keys["alice"])).json()["output"]
    assert output["status"] == "error"
    assert "model_unavailable" in output["reasons"] and "model_error" in output["reasons"]
    assert not any(reason.startswith("model_unavailable:") for reason in output["reasons"])


def test_the_view_cuts_log_paths_in_nested_values_patches_and_events_and_leaves_the_rest():
    detail = "model_unavailable:embedded llama.cpp server (log: /srv/keel/logs/llm.log)"
    view = ClientView()
    answer = "See https://example.org/manual, page 4 [Source 1]."  # the answer's own text is not touched
    event = {"event": "on_chain_end", "data": {"output": {"error": detail, "reasons": ["model_error", detail],
                                                          "answer": answer}}}
    assert view(event)["data"]["output"] == {"error": "model_unavailable", "answer": answer,
                                             "reasons": ["model_error", "model_unavailable"]}
    patch = view(RunLogPatch({"op": "add", "path": "/logs/finalize_answer/final_output/reasons/1", "value": detail}))
    assert isinstance(patch, RunLogPatch) and patch.ops[0]["value"] == "model_unavailable"
    log = view(RunLog({"op": "replace", "path": "", "value": {}}, state={"final_output": {"reasons": [detail]}}))
    assert isinstance(log, RunLog) and log.state["final_output"]["reasons"] == ["model_unavailable"]
    streamed = view(((), "values", {"reasons": (detail, "input_tokens=12")}))
    assert streamed == ((), "values", {"reasons": ("model_unavailable", "input_tokens=12")})
    assert "/srv/keel" not in json.dumps(view({"x": [detail, {"y": detail}]}))
    assert view.cut == {detail}
