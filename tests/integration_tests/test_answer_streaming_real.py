"""LangChain's messages mode on the real parts (SmolLM2 by llama.cpp, Redis Stack, the Mongo-wire
server, all-MiniLM-L6-v2): what streams is the checked answer, word by word, and nothing the model
wrote on the way to it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk

from tests.pdf_factory import make_pdf
from tests.varden_guide import ISLAND_REPORT_PAGES

MARKERS = ("<thinking", "</thinking", "<answer", "</answer", "<|im_end|>", "<|im_start|>")


@pytest.fixture(scope="module")
def graph_and_user(keel_config, redis_url, mongodb_uri, llm_endpoint, tmp_path_factory):
    from keel.core.configuration import Configuration
    from keel.graph import build_graph
    from keel.loaders.pipeline import ingest
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store
    from keel.stores.history import get_checkpointer

    report = Path(tmp_path_factory.mktemp("docs")) / "varden-report.pdf"
    make_pdf(report, ISLAND_REPORT_PAGES, title="Varden Island Annual Report")
    user = f"stream-{uuid.uuid4().hex[:8]}"
    cfg = Configuration(user_id=user, keel_home=keel_config.keel_home)
    assert ingest([report], get_vector_store(cfg, get_embeddings(cfg)), cfg, user_id=user).documents == 1
    return build_graph(checkpointer=get_checkpointer(cfg)), user


def test_messages_mode_streams_the_checked_answer_from_the_real_model(graph_and_user):
    graph, user = graph_and_user
    config = {"configurable": {"user_id": user, "thread_id": uuid.uuid4().hex}}
    streamed, final = [], {}
    for mode, payload in graph.stream({"messages": [("human", "Who built the Varden lighthouse?")]}, config,
                                      stream_mode=["messages", "values"]):
        if mode == "messages" and isinstance(payload[0], AIMessage):
            streamed.append(payload[0])
        elif mode == "values":
            final = payload
    assert final["status"] == "success", final
    answer = final["messages"][-1]
    assert all(isinstance(message, AIMessageChunk) for message in streamed)  # the whole message is not repeated
    assert "".join(message.content for message in streamed) == final["answer"] == answer.content
    assert {message.id for message in streamed} == {answer.id}
    assert len([message for message in streamed if message.content]) == len(final["answer"].split())
    for marker in MARKERS:
        assert marker not in "".join(message.content for message in streamed), marker
    # the conversation keeps the message that was streamed, under the same id
    remembered = graph.get_state(config).values["messages"][-1]
    assert (remembered.id, remembered.content) == (answer.id, answer.content)


def test_what_the_search_found_streams_before_the_first_draft_word(graph_and_user):
    """keel.progress names the document the search found, ahead of the model's first word."""
    graph, user = graph_and_user
    config = {"configurable": {"user_id": user, "thread_id": uuid.uuid4().hex}}
    kinds, found = [], None
    for _namespace, mode, payload in graph.stream({"messages": [("human", "Who built the Varden lighthouse?")]},
                                                  config, stream_mode=["custom"], subgraphs=True):
        if isinstance(payload, dict) and str(payload.get("event", "")).startswith("keel."):
            kinds.append(payload["event"])
            found = found or (payload if payload["event"] == "keel.progress" else None)
    assert "keel.token" in kinds and kinds.index("keel.progress") < kinds.index("keel.token")
    assert found["passages"] >= 1 and any(name.endswith("varden-report.pdf") for name in found["sources"])
