"""The tokenizer proxy's limits: read once from the endpoint's model info route as TGI, vLLM and
llama.cpp's server document them (loopback servers speaking each), or from the embedded model's GGUF,
and applied to the context window the prompt is fitted to."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from keel.components import Components
from keel.core.configuration import Configuration
from keel.models import model_limits
from keel.models.model_limits import ModelLimits, endpoint_limits, fitted_to_model, limits_from_info
from tests.answer_fakes import ScriptedChatModel

# The bodies as each server documents them (trimmed to the fields that matter and a few beside them).
TGI_INFO = {"model_id": "Qwen/Qwen2.5-1.5B-Instruct", "max_input_tokens": 3000, "max_total_tokens": 3500,
            "max_batch_total_tokens": 16000, "version": "3.0.0"}
TGI_V1_INFO = {"model_id": "m", "max_input_length": 1024, "max_total_tokens": 2048}
VLLM_MODELS = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct", "object": "model",
                                           "max_model_len": 2048, "owned_by": "vllm"}]}
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 1536, "model": "m.gguf"}, "total_slots": 1}
LLAMA_CPP_PYTHON_MODELS = {"object": "list", "data": [{"id": "m.gguf", "object": "model", "owned_by": "me"}]}


@pytest.fixture
def server():
    """A loopback server answering GET routes with the given JSON bodies (404 elsewhere); records the paths."""
    routes, seen = {}, []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            seen.append(self.path)
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body if body is not None else {"error": "Not Found"}).encode())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    endpoint_limits.cache_clear()
    yield f"http://127.0.0.1:{httpd.server_port}", routes, seen
    httpd.shutdown()
    endpoint_limits.cache_clear()


@pytest.mark.parametrize("routes, expected", [
    ({"/info": TGI_INFO}, ModelLimits(3500, 3000, 16000, "tgi /info")),
    ({"/info": TGI_V1_INFO}, ModelLimits(2048, 1024, None, "tgi /info")),
    ({"/v1/models": VLLM_MODELS}, ModelLimits(2048, None, None, "vllm /v1/models")),
    ({"/v1/models": LLAMA_CPP_PYTHON_MODELS, "/props": LLAMA_PROPS}, ModelLimits(1536, None, None, "llama.cpp /props")),
    ({"/v1/models": LLAMA_CPP_PYTHON_MODELS}, ModelLimits()),
])
def test_each_servers_info_route_gives_its_limits_once(server, routes, expected):
    url, served, seen = server
    served.update(routes)
    assert endpoint_limits(url, 2.0) == expected
    calls = len(seen)
    assert endpoint_limits(url, 2.0) == expected and len(seen) == calls  # cached: asked once per process


def test_a_body_without_limits_or_of_another_shape_states_none():
    assert limits_from_info("/info", {"model_id": "m"}) is None
    assert limits_from_info("/v1/models", {"data": []}) is None
    assert limits_from_info("/v1/models", ["not", "an", "object"]) is None
    assert limits_from_info("/props", {"default_generation_settings": {"n_ctx": True}}) is None


def test_the_window_the_prompt_is_fitted_to_is_the_smallest_the_server_takes(server):
    url, served, _ = server
    served["/info"] = TGI_INFO
    cfg = Configuration(llm_endpoint=url, llm_context_window=4096, max_new_tokens=256)
    assert fitted_to_model(cfg).llm_context_window == 3000 + 256  # the prompt limit plus the answer
    assert fitted_to_model(Configuration(llm_endpoint=url, llm_context_window=2048)).llm_context_window == 2048
    assert Components(chat_model=ScriptedChatModel(responses=["x"], calls=[])).fitted(cfg) is cfg  # a user's own model


def test_the_embedded_window_is_n_ctx_at_most_what_the_gguf_states(monkeypatch):
    from keel.runtime import model_pool

    monkeypatch.setattr(model_pool, "gguf_context_length", lambda path: 2048)
    assert fitted_to_model(Configuration(llm_context_window=4096)).llm_context_window == 2048
    monkeypatch.setattr(model_pool, "gguf_context_length", lambda path: 32768)
    cfg = Configuration(llm_context_window=4096)
    assert fitted_to_model(cfg) is cfg


def test_the_embedded_server_is_started_with_the_window_every_caller_computes():
    from keel.runtime import servers

    wide = Configuration(llm_context_window=16384)  # more than the bundled model was trained for (8192)
    spec = servers._llm_spec(wide)
    assert spec.settings["n_ctx"] == "8192"
    assert servers._llm_spec(fitted_to_model(wide)).settings == spec.settings  # the same server: no restart


def test_an_endpoint_that_is_down_leaves_the_settings_as_they_are():
    endpoint_limits.cache_clear()
    cfg = Configuration(llm_endpoint="http://127.0.0.1:9", connect_timeout_s=0.5)
    assert fitted_to_model(cfg) == cfg


def test_an_endpoint_that_was_down_is_asked_again_after_a_while(server, monkeypatch):
    import httpx

    url, served, seen = server
    clock = [1000.0]
    monkeypatch.setattr(model_limits.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(model_limits, "_failed", {})
    served["/v1/models"] = VLLM_MODELS
    real_get = httpx.get

    def down(*args, **kwargs):
        raise httpx.ConnectError("connection refused")

    monkeypatch.setattr(httpx, "get", down)
    with pytest.raises(ConnectionError):
        endpoint_limits(url, 0.5)
    monkeypatch.setattr(httpx, "get", real_get)  # the server is up again
    with pytest.raises(ConnectionError):  # within RETRY_AFTER_S it is not asked
        endpoint_limits(url, 0.5)
    assert seen == []
    clock[0] += model_limits.RETRY_AFTER_S + 1
    assert endpoint_limits(url, 2.0).context_window == 2048  # the same URL: asked again, and read


def test_a_refusing_or_loading_server_is_not_remembered_as_stating_no_limits(server, monkeypatch):
    import httpx

    url, served, seen = server
    monkeypatch.setattr(model_limits, "_failed", {})
    real_get = httpx.get
    monkeypatch.setattr(httpx, "get", lambda *a, **k: httpx.Response(503, json={"error": "loading"}))
    with pytest.raises(ConnectionError):
        endpoint_limits(url, 0.5)
    monkeypatch.setattr(httpx, "get", real_get)
    monkeypatch.setattr(model_limits, "_failed", {})
    served["/info"] = TGI_INFO
    assert endpoint_limits(url, 2.0).context_window == 3500
