"""Chat servers' error bodies as TGI, vLLM and llama.cpp's server document them, reaching Keel's real
client from a loopback server: a refused request is named and not retried; an overloaded server is."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import HumanMessage

from keel.chains.model_recovery import ModelRefusedError, ModelUnavailableError, run_with_model_recovery
from keel.components import Components
from keel.core.configuration import Configuration
from keel.models.chat import get_chat_model
from keel.models.endpoint_errors import endpoint_error
from tests import openai_loopback

TOO_LONG = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 3500. Given: 3900"
ERRORS = {
    "tgi": (422, {"error": TOO_LONG, "error_type": "validation"}),
    "vllm": (400, {"object": "error", "message": "This model's maximum context length is 2048 tokens.",
                   "type": "BadRequestError", "param": None, "code": 400}),
    "llama.cpp": (400, {"error": {"code": 400, "message": "the request exceeds the available context size",
                                  "type": "exceed_context_size_error"}}),
}


@pytest.fixture(params=sorted(ERRORS))
def refusing(request):
    state, server = openai_loopback.start(request.param)
    state.error = ERRORS[request.param]
    yield request.param, state
    server.shutdown()
    server.server_close()


def test_each_servers_error_body_is_read_and_a_refusal_is_not_retried(refusing, caplog):
    flavour, state = refusing
    cfg = Configuration(chat_runtime="endpoint", llm_endpoint=state.url, model_failure_retries=2)
    model = get_chat_model(cfg)
    with pytest.raises(Exception) as raised:
        model.invoke([HumanMessage("hi")])
    said = endpoint_error(raised.value)
    status, body = ERRORS[flavour]
    assert said.status == status and said.refused and said.message and said.message in str(body)
    state.requests.clear()
    with caplog.at_level(logging.ERROR, logger="keel.answer"), pytest.raises(ModelRefusedError) as refused:
        run_with_model_recovery(Components(), cfg, lambda m: m.invoke([HumanMessage("hi")]))
    assert len(state.requests) == 1  # not sent again
    assert refused.value.reason.startswith("model_refused:") and said.message[:40] in caplog.text


def test_an_overloaded_server_is_retried_then_unavailable():
    state, server = openai_loopback.start("tgi")
    state.error = (429, {"error": "Model is overloaded", "error_type": "overloaded"})
    try:
        cfg = Configuration(chat_runtime="endpoint", llm_endpoint=state.url, model_failure_retries=1)
        with pytest.raises(ModelUnavailableError) as raised:
            run_with_model_recovery(Components(), cfg, lambda m: m.invoke([HumanMessage("hi")]))
        assert not isinstance(raised.value, ModelRefusedError) and len(state.chat_requests()) == 2
    finally:
        server.shutdown()
        server.server_close()


def test_what_is_not_an_http_error_has_no_body_to_read():
    assert endpoint_error(ValueError("x")) is None
    assert endpoint_error(ConnectionError("refused")) is None
