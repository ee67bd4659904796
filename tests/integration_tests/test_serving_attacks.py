"""The attacks once probed against `keel serve`, replayed on a real server (uvicorn on a free
loopback port) over the real parts: API keys and conversation owners in the embedded Mongo-wire
server, documents in Redis Stack, answers from llama.cpp. Each must fail safely; then two users
ask 20 questions each at once and never see each other's sources, while /healthz stays fast."""

from __future__ import annotations

import base64
import socket
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from keel.core.configuration import Configuration
from keel.server.app import create_app
from keel.server.background import serving

pytestmark = pytest.mark.real

ALICE_TEXT = "Alder clinic notes. The vault code of the Alder clinic is 4411. The Alder clinic opens at 7 am."
MALLORY_TEXT = "Birch harbour notes. The vault code of the Birch harbour is 9922. The Birch harbour opens at 9 pm."
HEALTHZ_LIMIT_S = 0.1  # /healthz under load: answered within 100 ms (p95 of the probes)
HEALTHZ_FREEZE_S = 1.0  # and never stalled
REFUSAL_HANG_S = 20.0  # a refused attack answers at once; this only tells a hang from an answer


def question(text: str, **configurable) -> dict:
    body = {"input": {"messages": [{"type": "human", "content": text}]}}
    body["config"] = {"configurable": {"max_new_tokens": 48, **configurable}}
    return body


def upload(name: str, text: str, **extra) -> dict:
    return {"filename": name, "data_base64": base64.b64encode(text.encode()).decode(), **extra}


@pytest.fixture(scope="module")
def live(keel_config, redis_url, mongodb_uri, llm_endpoint):
    from keel.server.auth import ApiKeys

    tag = uuid.uuid4().hex[:8]
    cfg = Configuration(keel_home=keel_config.keel_home, mongodb_database=f"keel_attack_{tag}",
                        index_name=f"test_attack_{tag}", rate_limit_burst=1000, max_request_bytes=64 * 1024,
                        max_file_bytes=1024 * 1024, max_concurrent_generations=2, max_queued_generations=64,
                        generation_queue_timeout_s=600, generation_timeout_s=600)
    keys = ApiKeys.from_config(cfg)
    alice, mallory = f"alice-{tag}", f"mallory-{tag}"
    tokens = {"alice": keys.add(alice), "mallory": keys.add(mallory, "reviewer")}
    app = create_app(cfg=cfg)
    with serving(app) as url, httpx.Client(base_url=url, timeout=600) as client:
        docs = {}
        for who, name, text in (("alice", "alder.txt", ALICE_TEXT), ("mallory", "birch.txt", MALLORY_TEXT)):
            response = client.post("/ingest", json=upload(name, text), headers=auth(tokens[who]))
            assert response.status_code == 200, response.text
            docs[who] = response.json()["doc_ids"]
        yield SimpleLive(client, cfg, tokens, {"alice": alice, "mallory": mallory}, docs, app)
    from keel.stores.connections import get_redis

    get_redis(cfg).ft(cfg.index_name).dropindex(delete_documents=True)


class SimpleLive:
    def __init__(self, client, cfg, tokens, users, docs, app):
        self.client, self.cfg, self.tokens, self.users, self.docs, self.app = client, cfg, tokens, users, docs, app

    def post(self, who: str, path: str, body, **kwargs) -> httpx.Response:
        return self.client.post(path, json=body, headers=auth(self.tokens[who]), **kwargs)


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_impersonation_is_refused_and_no_route_answers_from_another_users_documents(live):
    for route in ("/chat/invoke", "/chat/stream", "/chat/events"):
        response = live.post("mallory", route, question("What is the vault code?", user_id=live.users["alice"]))
        assert response.status_code == 403 and "4411" not in response.text, route
    batch = live.post("mallory", "/chat/batch", {"inputs": [question("vault code?")["input"]],
                                                 "config": {"configurable": {"user_id": live.users["alice"]}}})
    assert batch.status_code == 403
    no_key = live.client.post("/chat/invoke", json=question("What is the vault code?"))
    assert no_key.status_code == 401 and "4411" not in no_key.text
    # mallory's own question, even limited to alice's document ids, never reaches alice's document
    own = live.post("mallory", "/chat/invoke", question("What is the vault code of the Alder clinic?",
                                                        doc_ids=live.docs["alice"]))
    assert own.status_code == 200 and "4411" not in own.text
    assert all(s["doc_id"] not in live.docs["alice"] for s in own.json()["output"].get("sources") or [])


def test_another_users_thread_id_is_the_callers_own_and_an_empty_question_dumps_nothing(live):
    """Conversation ids are each user's own: mallory sending alice's id gets a conversation of her
    own, the same answer an unused id gets (nothing to probe, nothing to squat), and alice's stays
    untouched."""
    thread = f"alice-thread-{uuid.uuid4().hex[:6]}"
    first = live.post("alice", "/chat/invoke", question("When does the Alder clinic open?", thread_id=thread))
    assert first.status_code == 200, first.text
    for route in ("/chat/invoke", "/chat/stream", "/chat/stream_log", "/chat/events"):
        taken = live.post("mallory", route, question("What did alice ask?", thread_id=thread))
        fresh = live.post("mallory", route, question("What did alice ask?", thread_id=f"unused-{uuid.uuid4().hex[:6]}"))
        assert taken.status_code == fresh.status_code == 200, route
        assert "When does the Alder clinic open" not in taken.text, route
        empty = live.post("alice", route, question("  ", thread_id=thread))
        assert empty.status_code == 400 and "Alder" not in empty.text, route
    again = live.post("alice", "/chat/invoke", question("And the vault code?", thread_id=thread))
    humans = [m["content"] for m in again.json()["output"]["messages"] if m["type"] == "human"]
    assert humans == ["When does the Alder clinic open?", "And the vault code?"]


def test_deployment_settings_in_a_request_are_refused_and_touch_nothing(live, redis_url):
    import redis

    from keel.runtime import servers

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.5)
    trap = f"http://127.0.0.1:{listener.getsockname()[1]}"
    llm_before = {s.name: s.pid for s in servers.status(live.cfg)}.get("llm")
    elsewhere = f"/tmp/keel-attack-{uuid.uuid4().hex[:6]}"
    attacks = {"question_negation_pattern": "(a+)+$", "ttl_seconds": 2, "llm_endpoint": trap,
               "redis_url": trap.replace("http", "redis"), "embedding_endpoint": trap, "llm_threads": 3,
               "keel_home": elsewhere, "chat_runtime": "transformers", "index_name": "attack_index",
               "max_new_tokens": 3500, "max_attempts": 10_000, "max_continuations": 10_000}
    for setting, value in attacks.items():
        started = time.monotonic()
        response = live.post("mallory", "/chat/invoke", question("Is the harbour not open?", **{setting: value}))
        assert response.status_code == 400 and setting in response.json()["detail"], (setting, response.text)
        # refused up front, never after doing the work (the pattern froze a server for 78 s): a
        # bound far above a refusal's milliseconds, so only a hang can fail it
        assert time.monotonic() - started < REFUSAL_HANG_S, setting
        health = live.client.get("/healthz")
        assert health.status_code == 200 and health.elapsed.total_seconds() < REFUSAL_HANG_S
    with pytest.raises(socket.timeout):
        listener.accept()  # nothing connected to the attacker's listener
    listener.close()
    assert {s.name: s.pid for s in servers.status(live.cfg)}.get("llm") == llm_before  # not restarted
    import os

    assert not os.path.exists(elsewhere)
    indexes = {name.decode() if isinstance(name, bytes) else name for name in redis.Redis.from_url(redis_url).execute_command("FT._LIST")}
    assert "attack_index" not in indexes
    time.sleep(3)  # the ttl_seconds attack's 2 s have passed: alice's document is still there
    found = live.post("alice", "/chat/invoke", question("What is the vault code of the Alder clinic?"))
    assert any(s["doc_id"] in live.docs["alice"] for s in found.json()["output"].get("sources") or []), found.text


def test_oversized_bodies_and_huge_single_lines_are_refused_before_reading(live):
    started = time.monotonic()
    huge = live.client.post("/chat/invoke", content=b"x" * (10 * 1024 * 1024),
                            headers={**auth(live.tokens["mallory"]), "Content-Type": "application/json"})
    assert huge.status_code == 413 and time.monotonic() - started < 10
    line = "word" * (2 * 1024 * 1024)  # an 8 MB single line as a document: over max_file_bytes
    upload_response = live.post("mallory", "/ingest", upload("line.txt", line))
    assert upload_response.status_code == 413
    long_question = live.post("mallory", "/chat/invoke", question("why " * 5000))
    assert long_question.status_code in (400, 413) and long_question.json()["request_id"]


def test_a_client_that_disconnects_frees_its_generation_slot(live):
    guard = next(m.kwargs["guard"] for m in live.app.user_middleware if "guard" in m.kwargs)
    with live.client.stream("POST", "/chat/events", json=question("When does the Alder clinic open?"),
                            headers=auth(live.tokens["alice"])) as events:
        assert events.status_code == 200
        next(events.iter_lines())  # the answer has started
    deadline = time.monotonic() + 10
    while guard.generations.active and time.monotonic() < deadline:
        time.sleep(0.1)
    assert guard.generations.active == 0


def test_two_users_twenty_concurrent_questions_each_never_mix_and_healthz_stays_fast(live):
    asks = [("alice", "What is the vault code of the Alder clinic?", "9922"),
            ("mallory", "What is the vault code of the Birch harbour?", "4411")] * 20
    health: list[float] = []

    def one(item):
        who, text, other_secret = item
        response = live.post(who, "/chat/invoke", question(text))
        return who, other_secret, response

    with ThreadPoolExecutor(max_workers=len(asks)) as pool:
        futures = [pool.submit(one, item) for item in asks]
        while not all(f.done() for f in futures):
            started = time.perf_counter()
            assert live.client.get("/healthz").status_code == 200
            health.append(time.perf_counter() - started)
            time.sleep(0.2)
        results = [f.result() for f in futures]
    errors = [r.status_code for _, _, r in results if r.status_code != 200]
    assert errors == []
    crossed = 0
    for who, other_secret, response in results:
        other = "mallory" if who == "alice" else "alice"
        output = response.json()["output"]
        sources = output.get("sources") or []
        # what a person reads (the answer, its source list) and the documents it came from; not the raw
        # JSON, whose similarity scores and ids hold 4-digit runs like the secrets by chance
        shown = f"{output.get('answer') or ''}\n{output.get('sources_markdown') or ''}"
        leaked = other_secret in shown or any(s["doc_id"] in live.docs[other] for s in sources)
        crossed += leaked
        assert not leaked, (who, shown, sources)
    assert crossed == 0
    # The bound holds for the probes as a whole (p95); one probe may meet a GC pause or the other
    # core's scheduler on a 2-core machine, so a single slow probe is not a verdict, but a server
    # that stalls (the regex attack froze it for over a minute) fails the no-freeze bound.
    p95 = statistics.quantiles(health, n=20)[-1] if len(health) >= 2 else health[0]
    assert p95 < HEALTHZ_LIMIT_S and max(health) < HEALTHZ_FREEZE_S, \
        f"/healthz p95 {p95 * 1000:.0f} ms, max {max(health) * 1000:.0f} ms over {len(health)} probes"
