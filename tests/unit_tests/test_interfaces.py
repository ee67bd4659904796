"""The ways users reach Keel that need no server: LangGraph Studio's langgraph.json names the compiled graph, and
LangServe's playground page is served. The `keel` command and the real runtimes are in
integration_tests/test_interfaces.py."""

from __future__ import annotations

import json

from tests.langgraph_json import langgraph_spec, load_reference

# The chat graph's steps: the guardrails, the token-budget gate, refusal, the system prompt, routing and the
# three answering prompts.
CHAT_GRAPH_NODES = {
    "guardrails", "exceeded_token_budget", "not_safe", "prefill_system_prompt", "route_query",
    "single_doc_answer", "multi_doc_answer", "pretrained_corpus_answer",
}


def test_langgraph_json_names_the_compiled_chat_graph_with_all_its_steps():
    spec = langgraph_spec()
    compiled = load_reference(spec["graphs"]["keel"])
    assert CHAT_GRAPH_NODES <= set(compiled.get_graph().nodes)
    assert "." in spec["dependencies"]


def test_langserve_playground_page_is_served():
    """The /chat/playground page (LangServe's UI) loads and names the graph's input schema route."""
    from fastapi.testclient import TestClient
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from keel.graph import build_graph
    from keel.server.app import create_app
    from tests.fakes import StaticRetriever
    from tests.serving_fakes import bearer, keys_and_owners

    graph = build_graph(chat_model=FakeListChatModel(responses=["unused"]), retriever=StaticRetriever(documents=[]))
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    client = TestClient(create_app(graph, api_keys=api_keys, owners=owners), headers=bearer(keys["alice"]))
    page = client.get("/chat/playground/")
    assert page.status_code == 200, page.text[:300]
    assert "text/html" in page.headers["content-type"] and "<html" in page.text.lower()
    schema = client.get("/chat/input_schema")
    assert schema.status_code == 200 and "messages" in json.dumps(schema.json())
