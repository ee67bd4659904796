"""A request that is over stops its generation: when the client disconnects or the time limit
passes, the model call running in a worker thread stops within a chunk or two, the generation slot
is held until it has, and the cancel is not mistaken for a model outage (no retry, no
model_unavailable answer). On fakes: a slow streaming chat model that records what it yielded,
behind the real gate and app served by uvicorn on loopback."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from typing import Any, Iterator
from urllib.parse import urlparse

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.models.cancellation import CancelToken, GenerationCancelled, bind, guard_stream, unbind
from keel.components import Components
from keel.chains.model_recovery import ModelUnavailableError, run_with_model_recovery
from keel.server.app import create_app
from keel.server.background import serving
from tests.answer_fakes import KeywordEmbeddings
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
ANSWER = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"
QUESTION = "Who built the Varden lighthouse?"
CHUNK_S = 0.02  # the fake model's time per chunk
LONG_CHUNKS = 3000  # an abandoned answer would run a minute
CHUNKS_AFTER_CLOSE = 100  # the model may yield at most this many chunks (2 s) after the client closed
STOP_WAIT_S = 15.0  # a bound on waits that only a hang exceeds


class StreamRecord:
    """What the fake model did, across threads: chunks yielded, calls, calls running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.yielded = 0
        self.calls = 0
        self.running = 0
        self.most_running = 0
        self.closed_at: list[float] = []
        self.started_at: list[float] = []


class SlowChatModel(BaseChatModel):
    """Streams one word every ``chunk_s``: the first call (and any call beyond ``short_from``) never
    closes its answer within ``long_chunks``; calls from ``short_from`` on give ANSWER quickly."""

    record: Any
    chunk_s: float = CHUNK_S
    long_chunks: int = LONG_CHUNKS
    short_from: int = 10**9

    @property
    def _llm_type(self) -> str:
        return "slow-fake"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError("Keel streams every model call")

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        record = self.record
        with record.lock:
            record.calls += 1
            number = record.calls
            record.running += 1
            record.most_running = max(record.most_running, record.running)
            record.started_at.append(time.monotonic())
        try:
            if number >= self.short_from:
                pieces = [ANSWER[i:i + 8] for i in range(0, len(ANSWER), 8)]
            else:
                pieces = ["<answer>The Varden lighthouse"] + [f" and word{i}" for i in range(self.long_chunks)]
            for piece in pieces:
                time.sleep(self.chunk_s)
                with record.lock:
                    record.yielded += 1
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        finally:
            with record.lock:
                record.running -= 1
                record.closed_at.append(time.monotonic())


def served_app(record: StreamRecord, **settings):
    model = SlowChatModel(record=record, **{k: settings.pop(k) for k in ("short_from",) if k in settings})
    graph = build_graph(chat_model=model, embeddings=KeywordEmbeddings(),
                        retriever=StaticRetriever(documents=[passage_doc(FACT, page=1, doc_id="doc-1")]),
                        tokenizer=WordTokenizer(), checkpointer=InMemorySaver())
    api_keys, keys, owners = keys_and_owners()
    cfg = Configuration(rate_limit_burst=1000, **settings)
    app = create_app(graph=graph, cfg=cfg, store=object(), api_keys=api_keys, owners=owners)
    guard = next(m.kwargs["guard"] for m in app.user_middleware if "guard" in m.kwargs)
    return app, keys, guard


def body_for(path: str, **configurable) -> dict:
    graph_input = {"messages": [{"type": "human", "content": QUESTION}]}
    config = {"configurable": configurable} if configurable else {}
    if path == "/chat/batch":
        return {"inputs": [graph_input], "config": config}
    return {"input": graph_input, "config": config}


def open_and_abandon(url: str, path: str, key: str, record: StreamRecord, after_chunks: int = 5) -> int:
    """Send a question on a raw socket, close it once the model has yielded ``after_chunks`` chunks
    (a client that leaves mid-answer, whatever the route); returns the chunks yielded by then."""
    address = urlparse(url)
    payload = json.dumps(body_for(path)).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {address.hostname}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n").encode()
    sock = socket.create_connection((address.hostname, address.port))
    sock.sendall(head + payload)
    until(lambda: record.yielded >= after_chunks, "the model never started")
    with record.lock:
        sock.close()
        return record.yielded


def until(condition, what: str, timeout_s: float = STOP_WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


# --- the signal itself -------------------------------------------------------------------------

def test_a_cancelled_stream_stops_at_the_next_chunk_closes_its_source_and_counts_as_stopped():
    closed = []

    def source():
        try:
            for number in range(1000):
                yield number
        finally:
            closed.append(True)

    token = CancelToken()
    reset = bind(token)
    try:
        pulled = []
        with pytest.raises(GenerationCancelled):
            for number in guard_stream(source()):
                pulled.append(number)
                assert token.running == 1
                if number == 3:
                    token.cancel()
        assert pulled == [0, 1, 2, 3] and closed == [True] and token.running == 0
        with pytest.raises(GenerationCancelled):  # once cancelled, no model call starts
            next(guard_stream(source()))
    finally:
        unbind(reset)
    assert list(guard_stream(iter([1, 2]))) == [1, 2]  # outside a served request nothing changes


def test_stopped_waits_for_the_running_call_and_gives_up_after_its_grace():
    async def scenario():
        token = CancelToken()
        release = threading.Event()

        def worker():
            with token.model_call():
                release.wait(STOP_WAIT_S)

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.to_thread(until, lambda: token.running == 1, "the call never started")
        token.cancel()
        assert await token.stopped(0.05) is False  # still running: the grace runs out
        threading.Timer(0.1, release.set).start()
        assert await token.stopped(STOP_WAIT_S) is True and token.running == 0
        thread.join()

    asyncio.run(scenario())


def test_a_cancel_is_not_retried_nor_reported_as_a_model_outage():
    token = CancelToken()
    tries, retries = [], []

    def cancelled_mid_answer(model):
        tries.append(model)
        token.cancel()
        raise GenerationCancelled("the request was cancelled")

    def closed_under_it(model):  # the stream's connection was closed by the cancel: any error
        tries.append(model)
        token.cancel()
        raise ConnectionError("peer closed connection")

    cfg = Configuration(model_failure_retries=2)
    components = Components(chat_model=SlowChatModel(record=StreamRecord()))
    for run in (cancelled_mid_answer, closed_under_it):
        token, tries = CancelToken(), []
        reset = bind(token)
        try:
            with pytest.raises(GenerationCancelled):
                run_with_model_recovery(components, cfg, run, on_retry=retries.append)
        finally:
            unbind(reset)
        assert len(tries) == 1 and retries == []
    reset = bind(CancelToken())  # a real failure of a live request is still retried, then reported
    try:
        def fails(model):
            tries.append(model)
            raise ConnectionError("refused")

        tries = []
        with pytest.raises(ModelUnavailableError):
            run_with_model_recovery(components, cfg, fails, on_retry=retries.append)
        assert len(tries) == 3 and len(retries) == 2
    finally:
        unbind(reset)


# --- through the served app --------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/chat/events", "/chat/stream", "/chat/stream_events", "/chat/stream_log",
                                  "/chat/invoke", "/chat/batch"])
def test_a_client_that_leaves_mid_answer_stops_the_model_before_its_slot_is_freed(path, caplog):
    record = StreamRecord()
    app, keys, guard = served_app(record)
    caplog.set_level(logging.INFO)
    with serving(app) as url:
        at_close = open_and_abandon(url, path, keys["alice"], record)
        until(lambda: guard.generations.active == 0, "the slot was never freed")
        # the slot is free only once the model call has ended: the fake's stream was closed
        assert record.running == 0, "the slot was freed while the model was still generating"
        stopped_at = record.yielded
        time.sleep(10 * CHUNK_S)
        assert record.yielded == stopped_at, "the model went on generating after the request ended"
        assert stopped_at - at_close <= CHUNKS_AFTER_CLOSE, (at_close, stopped_at)
        assert record.calls == 1  # ended: not retried as a model outage, no second attempt
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "the chat model at" in m], messages  # model_recovery saw no failure
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], messages


def test_the_next_request_waits_until_the_abandoned_generation_has_stopped():
    record = StreamRecord()
    app, keys, guard = served_app(record, short_from=2, max_concurrent_generations=1, max_queued_generations=4)
    with serving(app) as url:
        open_and_abandon(url, "/chat/events", keys["alice"], record)
        with httpx.Client(base_url=url, timeout=STOP_WAIT_S * 2) as client:
            answer = client.post("/chat/invoke", json=body_for("/chat/invoke"), headers=bearer(keys["mallory"]))
    assert answer.status_code == 200 and "Mara Holt" in answer.json()["output"]["answer"]
    assert record.most_running == 1, "two generations ran at once with max_concurrent_generations=1"
    assert record.started_at[1] >= record.closed_at[0]


def test_a_request_past_its_time_limit_gets_504_and_its_model_stops():
    record = StreamRecord()
    app, keys, guard = served_app(record, generation_timeout_s=1.0)
    with serving(app) as url, httpx.Client(base_url=url, timeout=STOP_WAIT_S * 2) as client:
        response = client.post("/chat/invoke", json=body_for("/chat/invoke"), headers=bearer(keys["alice"]))
        assert response.status_code == 504
        until(lambda: guard.generations.active == 0, "the slot was never freed")
        assert record.running == 0
        stopped_at = record.yielded
        time.sleep(10 * CHUNK_S)
        assert record.yielded == stopped_at and stopped_at < LONG_CHUNKS // 10
