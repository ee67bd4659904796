"""End to end on the real parts: embedded Redis Stack, nx-27017 Mongo-wire server, SmolLM2 served
by llama.cpp, all-MiniLM-L6-v2 embeddings. Nothing here is faked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from keel.checks.parser import LAYERS
from tests.pdf_factory import make_pdf
from tests.varden_guide import ISLAND_REPORT_PAGES

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report_pdf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "varden-report.pdf"
    make_pdf(path, ISLAND_REPORT_PAGES, title="Varden Island Annual Report")
    return path


@pytest.fixture(scope="module")
def real_setup(keel_config, redis_url, mongodb_uri, llm_endpoint, report_pdf):
    """A fresh user who has ingested the report, and a factory for graphs with Mongo memory."""
    from keel.graph import build_graph
    from keel.core.configuration import Configuration
    from keel.loaders.pipeline import ingest
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store
    from keel.stores.history import get_checkpointer

    user = f"e2e-{uuid.uuid4().hex[:8]}"
    cfg = Configuration(user_id=user, keel_home=keel_config.keel_home)
    store = get_vector_store(cfg, get_embeddings(cfg))
    report = ingest([report_pdf], store, cfg, user_id=user)
    assert report.errors == [] and report.documents == 1

    def new_graph():
        return build_graph(checkpointer=get_checkpointer(cfg))

    return cfg, new_graph, report


def _ask(graph, cfg, question: str, thread: str) -> dict:
    config = {"configurable": {"user_id": cfg.user_id, "thread_id": thread}}
    return graph.invoke({"messages": [("human", question)]}, config)


def test_answerable_question_succeeds_with_its_source_and_page(real_setup):
    cfg, new_graph, report = real_setup
    result = _ask(new_graph(), cfg, "Who built the Varden lighthouse?", uuid.uuid4().hex)
    assert result["status"] == "success", result
    assert result["route"] == "single_doc"
    assert "holt" in result["answer"].lower()
    assert {"source": "varden-report.pdf", "page": 2} in [
        {"source": s["source"], "page": s["page"]} for s in result["sources"]
    ]
    assert result["sources"][0]["doc_id"] == report.doc_ids[0]
    assert 1 <= result["attempts"] <= cfg.max_attempts


def test_unanswerable_question_gets_i_dont_know_and_non_success(real_setup):
    cfg, new_graph, _ = real_setup
    result = _ask(new_graph(), cfg, "What is the capital city of Australia?", uuid.uuid4().hex)
    # off-topic: either nothing relevant is retrieved or "Australia" is in no passage; no model call
    assert result["status"] == "insufficient_context", result
    assert result["answer"] == cfg.fallback_answer
    assert result["sources"] == []


def test_follow_up_after_graph_restart_sees_the_first_turn(real_setup):
    cfg, new_graph, _ = real_setup
    thread = uuid.uuid4().hex
    first = _ask(new_graph(), cfg, "Who built the Varden lighthouse?", thread)
    assert first["status"] == "success"
    restarted = new_graph()  # a new graph object and a new Mongo client: only the database remembers
    config = {"configurable": {"user_id": cfg.user_id, "thread_id": thread}}
    remembered = restarted.get_state(config).values["messages"]
    assert [m.type for m in remembered] == ["human", "ai"]
    assert remembered[0].content == "Who built the Varden lighthouse?"
    second = _ask(restarted, cfg, "How far away can its lamp be seen?", thread)
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]
    assert second["messages"][1].content == first["answer"]


def test_langserve_invoke_and_stream(real_setup):
    from fastapi.testclient import TestClient

    from keel.server.app import create_app
    from tests.serving_fakes import bearer, keys_and_owners

    cfg, new_graph, _ = real_setup
    api_keys, keys, owners = keys_and_owners(users=(cfg.user_id,))
    client = TestClient(create_app(new_graph(), api_keys=api_keys, owners=owners), headers=bearer(keys[cfg.user_id]))
    body = {
        "input": {"messages": [{"type": "human", "content": "Who built the Varden lighthouse?"}]},
        "config": {"configurable": {"user_id": cfg.user_id}},
    }
    invoked = client.post("/chat/invoke", json=body)
    assert invoked.status_code == 200, invoked.text
    output = invoked.json()["output"]
    assert output["status"] == "success" and "holt" in output["answer"].lower()

    with client.stream("POST", "/chat/stream", json=body) as streamed:
        assert streamed.status_code == 200
        text = "".join(streamed.iter_text())
    events = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("event:")]
    assert "data" in events and events[-1] == "end"
    assert "single_doc_answer" in text


def test_keel_ask_json_has_every_key(real_setup, report_pdf):
    cfg, _, _ = real_setup
    env = {**os.environ, "KEEL_HOME": cfg.keel_home}
    completed = subprocess.run(
        [sys.executable, "-m", "keel.cli.main", "ask", "Who built the Varden lighthouse?", "--user", cfg.user_id,
         "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout)  # exactly one JSON object on stdout
    expected = {"answer", "status", "route", "sources", "quality", "confidence", "attempts", "continuations", "usage",
                "grounding_score", "reasons", "parse_layer"}
    assert expected <= set(result)
    assert set(result["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert result["status"] == "success"
    # the accepted attempt's parser layer travels to the output (one of the five parsing layers, or extractive)
    assert result["parse_layer"] in {*LAYERS, "extractive"}, result["parse_layer"]
    assert result["attempts"] >= 1 and isinstance(result["reasons"], list)
    assert all({"source", "page", "doc_id", "score"} <= set(s) for s in result["sources"])
