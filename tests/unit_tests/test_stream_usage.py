"""A streamed answer's token counts: Keel asks TGI and vLLM for them (they count a stream only when
``stream_options.include_usage`` asks) and takes theirs; llama.cpp's server sends none, and Keel
counts with the tokenizer instead (chains/generation.py). Checked at loopback servers."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from keel.core.configuration import Configuration
from keel.models.chat import get_chat_model, stream_chat, stream_prefilled
from tests import openai_loopback


@pytest.fixture
def server(request):
    state, http = openai_loopback.start(request.param)
    yield request.param, state
    http.shutdown()
    http.server_close()


def _total(chunks):
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    return merged


class _Template:
    chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    eos_token = "</s>"

    def apply_chat_template(self, turns, add_generation_prompt, tokenize):
        return "".join(turn["content"] for turn in turns)


@pytest.mark.parametrize("server", ["vllm", "tgi", "llama.cpp"], indirect=True)
def test_a_stream_asks_for_the_servers_counts_and_reports_them(server):
    flavour, state = server
    model = get_chat_model(Configuration(chat_runtime="endpoint", llm_endpoint=state.url))
    chunks = list(stream_chat(model, [HumanMessage("Who built the Varden lighthouse?")], 32, 0.0))
    written = len(state.answers[0].split())
    assert _total(chunks).content == state.answers[0]
    assert state.chat_requests()[-1]["stream_options"] == {"include_usage": True}
    expected = None if flavour == "llama.cpp" else {"input_tokens": 40, "output_tokens": written,
                                                    "total_tokens": 40 + written}
    assert _total(chunks).usage_metadata == expected


@pytest.mark.parametrize("server", ["vllm", "llama.cpp"], indirect=True)
def test_a_continued_answer_reports_the_servers_counts_too(server):
    flavour, state = server
    model = get_chat_model(Configuration(chat_runtime="endpoint", llm_endpoint=state.url))
    chunks = list(stream_prefilled(model, [HumanMessage("Who built it?")], "The Varden", 32, 0.0, tokenizer=_Template()))
    sent = state.requests[-1]
    assert sent["prompt"] == "Who built it?The Varden" and sent["stream_options"] == {"include_usage": True}
    assert "".join(c.content for c in chunks) == state.answers[0]
    usage = [c.usage_metadata for c in chunks if c.usage_metadata]
    written = len(state.answers[0].split(" "))
    assert usage == ([] if flavour == "llama.cpp" else [{"input_tokens": 40, "output_tokens": written,
                                                        "total_tokens": 40 + written}])
