"""Model servers started with an API key (TGI's and vLLM's --api-key, TEI's --api-key) answer Keel: a
loopback server that refuses every request without ``Authorization: Bearer <key>`` speaks the
OpenAI chat and completion API and TEI's embed API; Keel's real HTTP clients (langchain-huggingface's
InferenceClient, Keel's own completion stream, the health checks) reach it with KEEL_LLM_API_KEY and
KEEL_EMBEDDING_API_KEY, and without them the failure names the server, never the key."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

from keel.core.configuration import Configuration
from keel.runtime.servers import ServerUnavailableError

API_KEY = "tok-3f9a"
VECTOR = [0.6, 0.8, 0.0]


@pytest.fixture
def guarded_server():
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status: int, body, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            seen.append(self.headers.get("Authorization"))
            if self.headers.get("Authorization") == f"Bearer {API_KEY}":
                return True
            self._reply(401, {"error": "Unauthorized"})
            return False

        def do_GET(self):  # noqa: N802 - http.server's naming
            if self._authorized():
                self._reply(200, {"object": "list", "data": [{"id": "tgi", "object": "model"}]})

        def do_POST(self):  # noqa: N802
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self._authorized():
                return
            if self.path in ("/", "/embed"):  # TEI embeds at its root too (what the HF client posts to)
                inputs = payload["inputs"]
                self._reply(200, [VECTOR for _ in ([inputs] if isinstance(inputs, str) else inputs)])
            elif self.path == "/v1/chat/completions":
                self._reply(200, {
                    "id": "1", "object": "chat.completion", "created": 0, "model": "tgi",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "The lighthouse."},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                })
            elif self.path == "/v1/completions":
                events = [{"choices": [{"index": 0, "text": "The light", "finish_reason": None}]},
                          {"choices": [{"index": 0, "text": "house.", "finish_reason": "stop"}]}]
                body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
                self._reply(200, body.encode(), "text/event-stream")
            else:
                self._reply(404, {"error": "not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_the_chat_model_reaches_a_server_that_wants_its_api_key(guarded_server):
    from keel.models import chat

    url, seen = guarded_server
    cfg = Configuration(chat_runtime="endpoint", llm_endpoint=url, llm_api_key=API_KEY, connect_timeout_s=2.0)
    model = chat.get_chat_model(cfg)
    assert model.invoke([HumanMessage("Who kept the lighthouse?")]).content == "The lighthouse."
    streamed = list(chat._stream_completion(url, {"prompt": "x"}, 5.0, AIMessageChunk, chat._endpoint_headers(model)))
    assert "".join(chunk.content for chunk in streamed) == "The lighthouse."
    assert seen and set(seen) == {f"Bearer {API_KEY}"}  # the health check, the chat call, the completion


def test_without_the_key_the_chat_endpoint_is_an_error_naming_the_server_not_the_key(guarded_server):
    from keel.runtime.servers import llm_endpoint

    url, _ = guarded_server
    with pytest.raises(ServerUnavailableError, match=r"LLM endpoint at http://127\.0\.0\.1:\d+ .*HTTP 401"):
        llm_endpoint(Configuration(chat_runtime="endpoint", llm_endpoint=url, connect_timeout_s=2.0))
    with pytest.raises(ServerUnavailableError) as raised:
        llm_endpoint(Configuration(chat_runtime="endpoint", llm_endpoint=url, llm_api_key="wrong-key",
                                   connect_timeout_s=2.0))
    assert "wrong-key" not in str(raised.value)


def test_embeddings_reach_a_tei_that_wants_its_api_key(guarded_server, monkeypatch):
    from keel.models import embeddings as module

    url, seen = guarded_server
    monkeypatch.setattr(module, "_embeddings", {})
    made = module.endpoint_embeddings(url, Configuration(embedding_api_key=API_KEY, connect_timeout_s=2.0))
    assert made.embed_query("lighthouse") == pytest.approx(VECTOR)
    assert made.embed_documents(["a", "b"]) == [pytest.approx(VECTOR)] * 2
    assert set(seen) == {f"Bearer {API_KEY}"}
    monkeypatch.setattr(module, "_embeddings", {})
    with pytest.raises(ServerUnavailableError, match=r"embedding endpoint at .*HTTP 401"):
        module.endpoint_embeddings(url, Configuration(embedding_api_key=None, connect_timeout_s=2.0))


def test_a_pool_model_at_its_own_endpoint_gets_its_own_key(guarded_server):
    """KEEL_MODEL_API_KEYS: each model's server gets its token; the main key never goes to it."""
    from keel.models import chat
    from tests import openai_loopback

    url, seen = guarded_server
    other, other_server = openai_loopback.start("vllm")
    try:
        cfg = Configuration(chat_runtime="endpoint", llm_endpoint=other.url, llm_api_key="main-key",
                            model_endpoints={"qwen2.5-coder-1.5b": url},
                            model_api_keys={"qwen2.5-coder-1.5b": API_KEY},
                            chat_model="qwen2.5-coder-1.5b", connect_timeout_s=2.0)
        assert chat.get_chat_model(cfg).invoke([HumanMessage("Who kept the lighthouse?")]).content == "The lighthouse."
        assert seen and set(seen) == {f"Bearer {API_KEY}"}  # the health check and the call: its own key
        assert "model_api_keys" not in repr(cfg) and API_KEY not in repr(cfg)
        import dataclasses

        small = chat.get_chat_model(dataclasses.replace(cfg, chat_model="smollm2-135m"))
        small.invoke([HumanMessage("Who kept the lighthouse?")])
        assert other.chat_requests()  # the deployment's llm_endpoint answered the default model
        assert len(seen) == 2  # and the guarded server saw nothing of it
    finally:
        other_server.shutdown()
        other_server.server_close()


def test_a_models_key_never_goes_to_the_shared_endpoint(guarded_server):
    """A model named in model_api_keys but served by llm_endpoint: that server gets llm_api_key."""
    from keel.models import chat

    url, seen = guarded_server
    cfg = Configuration(chat_runtime="endpoint", llm_endpoint=url, llm_api_key=API_KEY,
                        model_api_keys={"qwen2.5-coder-1.5b": "its-own-key"}, chat_model="qwen2.5-coder-1.5b",
                        connect_timeout_s=2.0)
    assert chat.get_chat_model(cfg).invoke([HumanMessage("Who kept the lighthouse?")]).content == "The lighthouse."
    assert seen and set(seen) == {f"Bearer {API_KEY}"}


def test_a_bad_key_setting_is_refused_without_showing_the_key(monkeypatch):
    from keel.core.configuration import ConfigurationError

    monkeypatch.setenv("KEEL_MODEL_API_KEYS", "hf_SECRET_TOKEN_123")  # the name= forgotten
    with pytest.raises(ConfigurationError) as raised:
        Configuration()
    assert "model_api_keys must be one of" in str(raised.value) and "hf_SECRET" not in str(raised.value)
