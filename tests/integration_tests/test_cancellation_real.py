"""An answer abandoned by its client stops on the real llama.cpp server: the server (one generation
at a time, requests queued) is free for the next request within seconds, not after the abandoned
answer's thousand-odd tokens. Served by uvicorn on loopback; the documents come from a static
retriever, the model, its tokenizer and the server are the real ones."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlparse

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.server.app import create_app
from keel.server.background import serving
from tests.answer_fakes import KeywordEmbeddings
from tests.fakes import StaticRetriever, passage_doc
from tests.serving_fakes import keys_and_owners

pytestmark = pytest.mark.real

FACT = ("The Varden lighthouse was built in 1874 by the engineer Mara Holt. Its lamp can be seen from 22 nautical "
        "miles away. The keepers lived in the cottage beside the tower until 1961.")
QUESTION = "Describe the Varden lighthouse in as much detail as you can."
LONG_ANSWER_TOKENS = 1500  # early-EOS prevention makes the model write at least 95% of these
FREE_WITHIN_S = 8.0  # the llama server answers a one-token probe this soon after the client left
STARTED_WITHIN_S = 60.0  # only a hang exceeds this


def probe(endpoint: str) -> float:
    """Seconds the llama server takes to answer a one-token completion (it queues behind any
    generation still running)."""
    started = time.monotonic()
    response = httpx.post(endpoint.rstrip("/") + "/v1/completions", json={"prompt": "Hello", "max_tokens": 1},
                          timeout=600)
    response.raise_for_status()
    return time.monotonic() - started


def test_an_abandoned_answer_stops_generating_on_the_llama_server(keel_config, llm_endpoint):
    cfg = Configuration(keel_home=keel_config.keel_home, llm_endpoint=llm_endpoint, max_new_tokens=LONG_ANSWER_TOKENS,
                        eos_prevention=True, max_continuations=0, max_attempts=1, rate_limit_burst=100)
    graph = build_graph(embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=[passage_doc(FACT)]),
                        checkpointer=InMemorySaver())
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    app = create_app(graph=graph, cfg=cfg, store=object(), api_keys=api_keys, owners=owners)
    guard = next(m.kwargs["guard"] for m in app.user_middleware if "guard" in m.kwargs)
    probe(llm_endpoint)  # the server is up and idle
    with serving(app) as url:
        address = urlparse(url)
        payload = json.dumps({"input": {"messages": [{"type": "human", "content": QUESTION}]}}).encode()
        sock = socket.create_connection((address.hostname, address.port), timeout=STARTED_WITHIN_S)
        sock.sendall((f"POST /chat/events HTTP/1.1\r\nHost: {address.hostname}\r\n"
                      f"Authorization: Bearer {keys['alice']}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload)
        received, started = b"", time.monotonic()
        while b"keel.token" not in received:  # the model is generating the answer
            chunk = sock.recv(65536)
            assert chunk and time.monotonic() - started < STARTED_WITHIN_S, received[-500:]
            received += chunk
        sock.close()  # the client leaves mid-answer
        left = time.monotonic()
        waited = probe(llm_endpoint)
        print(f"probe after abandon: {waited:.2f}s; generation started after {left - started:.2f}s")
        deadline = time.monotonic() + STARTED_WITHIN_S
        while guard.generations.active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert guard.generations.active == 0
    assert waited < FREE_WITHIN_S, f"the llama server was busy {waited:.1f}s after the client left"
