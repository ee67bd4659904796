"""Servers killed under Keel, on real servers: a private MongoDB (nx-27017), Redis Stack and
llama.cpp under their own temporary KEEL_HOME (the session's shared servers stay untouched), and a
loopback OpenAI-compatible server this test controls. Every wait is bounded; ports are the OS's."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

import keel.cli.main
import keel.cli.running
from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.server.ownership import thread_of
from keel.runtime import servers
from keel.runtime.processes import RunDirectory, is_alive
from keel.stores.history import get_checkpointer
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

pytestmark = pytest.mark.real

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
ANSWER = "<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"
QUESTION = "Who built the Varden lighthouse?"
DEATH_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def private(tmp_path_factory):
    """Servers of this module only: killing them does not touch the session's."""
    home = tmp_path_factory.mktemp("keel-outages")
    cfg = Configuration(keel_home=str(home), redis_url=None, mongodb_uri=None, llm_endpoint=None,
                        connect_timeout_s=2.0, history_retry_backoff_s=0.1)
    yield cfg
    servers.stop(cfg)


def kill(cfg: Configuration, name: str) -> int:
    """SIGKILL an embedded server (no clean shutdown) and wait until it is gone; returns its pid."""
    state = RunDirectory(servers.keel_home(cfg)).read_state(name)
    os.kill(state.pid, signal.SIGKILL)
    deadline = time.monotonic() + DEATH_TIMEOUT_S
    while is_alive(state):
        assert time.monotonic() < deadline, f"{name} (pid {state.pid}) did not die"
        time.sleep(0.05)
    return state.pid


class KillingModel(FakeListChatModel):
    """Answers, after killing a server: the fault strikes while the answer is generated."""

    on_generate: object = None

    def _stream(self, *args, **kwargs):
        if self.on_generate is not None:
            self.on_generate()
            self.on_generate = None
        yield from super()._stream(*args, **kwargs)


def graph_with(chat_model, checkpointer=None):
    return build_graph(chat_model=chat_model, embeddings=BagOfWordsEmbeddings(), tokenizer=WordTokenizer(),
                       retriever=StaticRetriever(documents=[passage_doc(FACT)]), checkpointer=checkpointer)


def saved_messages(cfg: Configuration, thread_id: str) -> list:
    fresh = graph_with(FakeListChatModel(responses=["unused"]), get_checkpointer(cfg))
    return fresh.get_state({"configurable": {"thread_id": thread_id}}).values.get("messages", [])


def test_embedded_mongodb_killed_during_an_answer_is_restarted_and_the_turn_saved(private):
    servers.mongodb_uri(private)
    thread = uuid.uuid4().hex
    killed: list[int] = []
    model = KillingModel(responses=[ANSWER], on_generate=lambda: killed.append(kill(private, "mongo")))
    graph = graph_with(model, get_checkpointer(private))
    result = graph.invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": thread}})
    assert killed and result["status"] == "success" and "Mara Holt" in result["answer"]
    assert graph.checkpointer.pending == 0, "the retry restarted the embedded MongoDB and saved the turn"
    assert RunDirectory(servers.keel_home(private)).read_state("mongo").pid != killed[0]
    messages = saved_messages(private, thread)
    assert [m.type for m in messages] == ["human", "ai"] and "Mara Holt" in messages[-1].content


def test_configured_mongodb_killed_during_ask_prints_the_answer_warns_exits_3_and_saves_once_back(
    private, monkeypatch, capsys
):
    uri = servers.mongodb_uri(private)
    configured = Configuration(mongodb_uri=uri, connect_timeout_s=1.0, history_save_attempts=2,
                               history_retry_backoff_s=0.1, history_retry_interval_s=60.0)
    graph = graph_with(KillingModel(responses=[ANSWER], on_generate=lambda: kill(private, "mongo")),
                       get_checkpointer(configured))
    monkeypatch.setattr(keel.cli.running, "graph_with_history", lambda cfg: graph)
    thread = uuid.uuid4().hex
    started = time.monotonic()
    code = keel.cli.main.main(["ask", QUESTION, "--conversation", thread, "--json"])
    captured = capsys.readouterr()
    assert time.monotonic() - started < 60, "bounded: retries, not a hang"
    out = json.loads(captured.out)
    assert code == 3 and out["status"] == "success" and "Mara Holt" in out["answer"] and out["saved"] is False
    assert f"MongoDB at {uri} is unavailable" in captured.err and thread in captured.err
    assert "Traceback" not in captured.err

    assert servers.mongodb_uri(private) == uri, "restarted on its old port"
    assert graph.checkpointer.flush(attempts=3) is True
    # keel ask keeps the user's conversation under their own thread (keel/server/ownership.py)
    messages = saved_messages(private, thread_of(Configuration().user_id, thread))
    assert [m.type for m in messages] == ["human", "ai"] and "Mara Holt" in messages[-1].content


class KillingEmbeddings(BagOfWordsEmbeddings):
    """Kills Redis while the second document is embedded."""

    def __init__(self, on_second):
        super().__init__()
        self.documents, self.on_second = 0, on_second

    def embed_documents(self, texts):
        self.documents += 1
        if self.documents == 2:
            self.on_second()
        return super().embed_documents(texts)


def test_redis_killed_during_ingest_reports_per_file_errors_exits_1_and_keeps_what_was_stored(
    private, monkeypatch, capsys, tmp_path
):
    url = servers.redis_url(private)
    embeddings = KillingEmbeddings(on_second=lambda: kill(private, "redis"))
    monkeypatch.setattr("keel.models.embeddings.get_embeddings", lambda cfg: embeddings)
    monkeypatch.setenv("REDIS_URL", url)
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"Report {name}: the keeper lit the lamp at dusk and logged the weather.")
    user = f"outage-{uuid.uuid4().hex[:8]}"
    code = keel.cli.main.main(["ingest", str(tmp_path), "--user", user, "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1 and report["documents"] == 1 and "Traceback" not in captured.err
    # read-ahead workers hand files back as they are ready: whichever was stored first survives,
    # the other two are reported, in the order they were given
    errored = [e["source"].rsplit("/", 1)[-1] for e in report["errors"]]
    assert len(errored) == 2 and errored == sorted(errored)
    assert all(e["error"].startswith(f"Redis unavailable at {url}") for e in report["errors"])

    assert servers.redis_url(private) == url, "restarted on its old port"
    from keel.stores.connections import get_vector_store

    store = get_vector_store(Configuration(redis_url=url), embeddings)
    stored = store.list_documents(user)
    assert [d["doc_id"] for d in stored] == report["doc_ids"], "the stored file survived the kill"
    assert [d["source"].rsplit("/", 1)[-1] for d in stored] == [n for n in ("a.txt", "b.txt", "c.txt") if n not in errored]


class FakeOpenAIServer:
    """A loopback OpenAI-compatible chat server: answers ANSWER, or drops the connection of the
    next ``drop`` chat requests (what a killed server does to a client); ``stop()`` kills it."""

    def __init__(self):
        owner = self
        self.drop, self.requests = 0, 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - health check: /v1/models
                self._json({"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests += 1
                if owner.drop > 0:
                    owner.drop -= 1
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in (ANSWER[:30], ANSWER[30:]):
                    chunk = {"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                             "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece},
                                          "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                done = {"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

            def _json(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a dropped connection is the point
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=DEATH_TIMEOUT_S)


@pytest.fixture
def fake_llm(monkeypatch):
    server = FakeOpenAIServer()
    monkeypatch.setenv("KEEL_LLM_ENDPOINT", server.url)
    yield server
    server.stop()


def test_a_model_server_that_drops_an_answer_is_asked_again(fake_llm):
    fake_llm.drop = 1
    result = graph_with(None).invoke({"messages": [HumanMessage(QUESTION)]},
                                     {"configurable": {"connect_timeout_s": 1.0, "request_timeout_s": 10.0}})
    assert fake_llm.requests == 2 and result["status"] == "success" and "Mara Holt" in result["answer"]


def test_a_killed_model_server_is_status_error_naming_it_and_keel_ask_exits_1(fake_llm, monkeypatch, capsys):
    fake_llm.stop()
    monkeypatch.setattr(keel.cli.running, "graph_with_history", lambda cfg: graph_with(None))
    code = keel.cli.main.main(["ask", QUESTION, "--json"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1 and out["status"] == "error"
    assert f"model_unavailable:{fake_llm.url}" in out["reasons"]
    assert fake_llm.url not in out["answer"] and "Error" not in out["answer"]
    assert f"the language model at {fake_llm.url} did not answer" in captured.err
    assert "Traceback" not in captured.err


def test_the_embedded_model_server_killed_during_an_answer_is_restarted_and_answers(private, monkeypatch):
    """The one test on a real llama.cpp server: killed as the answer starts, restarted by the retry."""
    if not servers.importlib.util.find_spec("llama_cpp"):
        pytest.skip("llama-cpp-python is not installed")
    monkeypatch.delenv("KEEL_LLM_ENDPOINT", raising=False)
    servers.llm_endpoint(private)
    import keel.chains.generation

    real_stream, killed = keel.chains.generation.stream_chat, []

    def stream_after_kill(*args, **kwargs):
        if not killed:
            killed.append(kill(private, "llm"))
        yield from real_stream(*args, **kwargs)

    monkeypatch.setattr(keel.chains.generation, "stream_chat", stream_after_kill)
    settings = {"keel_home": private.keel_home, "max_new_tokens": 32, "max_attempts": 1, "max_continuations": 0,
                "chat_runtime": "endpoint"}
    result = graph_with(None).invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": settings})
    assert killed and result["status"] != "error", result["reasons"]
    assert RunDirectory(servers.keel_home(private)).read_state("llm").pid != killed[0]
