"""Replicas that share nothing but the stores: two `keel serve` processes on their own ports, over
the one embedded Redis Stack, Mongo-wire server and llama.cpp server, behind a round-robin proxy
(tests/round_robin_proxy.py), on loopback.

One conversation crosses them: its first question is answered by replica A, the follow-up by
replica B, which continues the history A saved in MongoDB and uses the context A cached in Redis
(B's own log says so; a client sees neither). A user's rate is one budget over both replicas.
Replica A is killed (SIGKILL) while it generates an answer; the client's retry through the proxy
reaches B (once A's mark on the conversation lapses), and the conversation goes on with every
earlier turn and nothing of the killed one. Two questions sent at once to one conversation through
two replicas never run beside each other.

The model is SmolLM2-135M on llama.cpp (10-60 s an answer on a shared two-core machine): five
answers and one cut short, once."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from keel.retrievers.followup_cache import FollowUpCache
from keel.server.auth import ApiKeys
from keel.server.ownership import thread_of
from tests.replica_processes import keel_env, keel_serve_command, replicas
from tests.round_robin_proxy import SERVED_BY, round_robin

pytestmark = pytest.mark.real

MEMO = ("Harbour office supply memo. The harbour office ordered 200 laptops for the new staff. "
        "The harbour office also ordered 350 blankets for the winter shelter. "
        "The laptops were delivered on 3 May and the blankets arrive on 9 June.")
FIRST = "How many laptops did the harbour office order?"
FOLLOW_UP = "What about the blankets?"  # "what about": a follow-up cue (followup_cues)
THIRD = "When were the laptops delivered?"
ANSWER_S = 600.0
ANSWERED = {"success", "insufficient_context", "low_confidence", "hallucination_detected"}


def ask_body(question: str, thread_id: str) -> dict:
    return {"input": {"messages": [{"type": "human", "content": question}]},
            "config": {"configurable": {"thread_id": thread_id, "max_new_tokens": 48}}}


def final_event(response: httpx.Response) -> dict:
    """keel.final of a /chat/events answer, read to its end."""
    final = None
    event = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: ") and event == "keel.final":
            final = json.loads(line[len("data: "):])
    assert final is not None, "the answer ended without keel.final"
    return final


def ask(client: httpx.Client, question: str, thread_id: str) -> tuple[str, dict]:
    with client.stream("POST", "/chat/events", json=ask_body(question, thread_id), timeout=ANSWER_S) as response:
        assert response.status_code == 200, response.read()
        return response.headers[SERVED_BY], final_event(response)


@pytest.fixture(scope="module")
def cluster(keel_home, keel_config, redis_url, mongodb_uri, llm_endpoint, tmp_path_factory):
    """Replicas A and B (`keel -v serve`), the proxy in front, and a user with one document."""
    keys = ApiKeys.from_config(keel_config)
    tag = uuid.uuid4().hex[:8]
    asker, flooder = f"replica-asker-{tag}", f"replica-flooder-{tag}"
    tokens = {asker: keys.add(asker), flooder: keys.add(flooder)}
    logs = tmp_path_factory.mktemp("replicas")
    with replicas(["A", "B"], keel_serve_command(verbose=True), keel_env(keel_home), logs) as started, \
            round_robin({name: r.url for name, r in started.items()}) as (url, proxy), \
            httpx.Client(base_url=url, timeout=ANSWER_S, headers={"Authorization": f"Bearer {tokens[asker]}"}) as client:
        uploaded = client.post("/ingest", json={"filename": f"harbour-{tag}.txt",
                                                "data_base64": _b64(MEMO)})
        assert uploaded.status_code == 200, uploaded.text
        yield {"replicas": started, "proxy": proxy, "client": client, "url": url, "asker": asker,
               "flooder_key": tokens[flooder], "doc_ids": set(uploaded.json()["doc_ids"])}
    for name in (asker, flooder):
        keys.revoke(name)


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def stored_turns(client: httpx.Client, thread_id: str) -> list[tuple[str, str]]:
    response = client.get(f"/conversations/{thread_id}")
    assert response.status_code == 200, response.text
    return [(m["role"], m["text"]) for m in response.json()["messages"]]


def test_a_users_rate_is_one_budget_over_both_replicas(cluster):
    """Runs first, while both replicas are up. Bad JSON is refused after the rate is taken, so
    these cost no answer. With a bucket per replica, a burst of 20 (the default) would let 40
    through the two."""
    from keel.core.configuration import Configuration

    cfg = Configuration()
    sent = 2 * cfg.rate_limit_burst + 4
    headers = {"Authorization": f"Bearer {cluster['flooder_key']}"}
    started = time.monotonic()
    with httpx.Client(base_url=cluster["url"], timeout=60, headers=headers) as client:
        answers = [client.post("/chat/invoke", content=b"{") for _ in range(sent)]
    elapsed = time.monotonic() - started
    codes = [a.status_code for a in answers]
    refill = cfg.rate_limit_per_minute / 60.0 * elapsed
    assert codes[:cfg.rate_limit_burst] == [400] * cfg.rate_limit_burst, codes
    assert codes.count(400) <= cfg.rate_limit_burst + refill + 1, (codes, elapsed)
    assert codes.count(429) >= sent - cfg.rate_limit_burst - refill - 1
    assert {a.headers[SERVED_BY] for a in answers} == {"A", "B"}  # spread over both, as a hostile caller would


def test_two_questions_at_once_on_two_replicas_are_never_run_beside_each_other(cluster):
    """Runs before the kill. While A answers one question, the same conversation's next question
    reaches B: it waits, then runs after A's (both kept, in order) or is refused with 409; run beside
    it, both turns would start from the same history and only one would be kept."""
    import threading

    client, proxy = cluster["client"], cluster["proxy"]
    thread_id = f"harbour-busy-{uuid.uuid4().hex[:8]}"
    generating, outcome = threading.Event(), {}

    def first_question():
        with client.stream("POST", "/chat/events", json=ask_body(FIRST, thread_id), timeout=ANSWER_S) as response:
            outcome["first_by"] = response.headers[SERVED_BY]
            final, event = None, None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[len("event: "):]
                    if event in ("keel.attempt", "keel.token"):
                        generating.set()
                elif line.startswith("data: ") and event == "keel.final":
                    final = json.loads(line[len("data: "):])
            outcome["first"] = final

    proxy.route_next_to("A")
    first = threading.Thread(target=first_question)
    first.start()
    assert generating.wait(ANSWER_S), "A never started answering"
    proxy.route_next_to("B")
    second = client.post("/chat/invoke", json=ask_body(FOLLOW_UP, thread_id), timeout=ANSWER_S)
    first.join(ANSWER_S)
    assert outcome["first_by"] == "A" and second.headers[SERVED_BY] == "B"
    assert outcome["first"] and outcome["first"]["status"] in ANSWERED, outcome
    asked = [text for role, text in stored_turns(client, thread_id) if role == "user"]
    if second.status_code == 409:
        assert "already being answered" in second.json()["detail"] and asked == [FIRST]
    else:
        assert second.status_code == 200, second.text
        assert asked == [FIRST, FOLLOW_UP]  # both kept, in the order they were asked


def test_a_conversation_crosses_replicas_and_survives_one_being_killed(cluster, keel_config, redis_client):
    client, proxy, started = cluster["client"], cluster["proxy"], cluster["replicas"]
    thread_id = f"harbour-{uuid.uuid4().hex[:8]}"

    proxy.route_next_to("A")
    served_by, first = ask(client, FIRST, thread_id)
    assert served_by == "A" and first["status"] in ANSWERED, first
    cache = FollowUpCache(redis_client, namespace=keel_config.index_name)
    # A left the turn's context in Redis, under the asker's own thread (keel/server/ownership.py)
    assert cache.get(cluster["asker"], thread_of(cluster["asker"], thread_id)) is not None
    assert "follow-up:" not in started["A"].log()

    proxy.route_next_to("B")
    served_by, second = ask(client, FOLLOW_UP, thread_id)
    assert served_by == "B" and second["status"] in ANSWERED, second
    assert "follow-up:" in started["B"].log(), started["B"].log()[-3000:]  # B read A's cached context
    for source in first["sources"] + second["sources"]:
        assert source["doc_id"] in cluster["doc_ids"], source
    turns = stored_turns(client, thread_id)
    assert [role for role, _ in turns] == ["user", "assistant"] * 2  # B continued A's history
    assert [text for role, text in turns if role == "user"] == [FIRST, FOLLOW_UP]

    proxy.route_next_to("A")
    with client.stream("POST", "/chat/events", json=ask_body(THIRD, thread_id), timeout=ANSWER_S) as response:
        assert response.headers[SERVED_BY] == "A"
        events = response.iter_lines()
        for line in events:  # wait until A is generating the answer, then kill it mid-run
            if line.startswith("event: keel.attempt") or line.startswith("event: keel.token"):
                break
        started["A"].kill()
        with pytest.raises(httpx.HTTPError):  # the stream is cut: no keel.final, no complete-looking answer
            for line in events:
                assert not line.startswith("event: keel.final")

    proxy.route_next_to("A")  # the retry's turn starts at the dead replica: the proxy passes it on to B
    served_by, third = ask(client, THIRD, thread_id)
    assert served_by == "B" and third["status"] in ANSWERED, third
    assert ("A", "/chat/events") in proxy.skipped
    turns = stored_turns(client, thread_id)
    assert [role for role, _ in turns] == ["user", "assistant"] * 3, turns  # the killed turn left nothing
    assert [text for role, text in turns if role == "user"] == [FIRST, FOLLOW_UP, THIRD]
