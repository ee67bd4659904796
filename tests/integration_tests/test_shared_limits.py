"""The per-user rate and the wrong-key bound hold across replicas: two apps (two replicas of
`keel serve`) counting in the one real Redis Stack give a caller one budget between them, however
the caller spreads requests over them. Each test counts under a fresh index name, so it shares no
bucket with any other test using the same Redis."""

from __future__ import annotations

import time
import uuid

import pytest
from fastapi.testclient import TestClient
from langchain_core.runnables import RunnableLambda

from keel.core.configuration import Configuration
from keel.server.app import create_app
from keel.server.shared_limits import SharedFailedAttempts, SharedRateLimiter, hashed
from tests.serving_fakes import bearer, keys_and_owners

pytestmark = pytest.mark.real


@pytest.fixture
def namespace(redis_client):
    name = f"test_limits_{uuid.uuid4().hex[:8]}"
    yield name
    for key in redis_client.scan_iter(match=f"*{name}*"):
        redis_client.delete(key)


def test_two_replicas_draw_on_one_bucket_per_user(redis_client, namespace):
    replica_a = SharedRateLimiter(redis_client, namespace, per_minute=6, burst=4)
    replica_b = SharedRateLimiter(redis_client, namespace, per_minute=6, burst=4)
    waits = [(replica_a if i % 2 else replica_b).take("alice") for i in range(8)]
    assert waits[:4] == [0.0] * 4  # the burst, taken from both replicas together
    assert all(8.0 <= wait <= 10.0 for wait in waits[4:]), waits  # then one request per 10 s between them
    assert replica_b.take("bob") == 0.0  # another user has a bucket of their own
    key = replica_a.key("alice")
    assert "alice" not in key and hashed("rate", "alice") in key  # a name cannot steer or forge a key
    assert 0 < redis_client.pttl(key) <= (4 / 6 * 60 + 1) * 1000  # gone once it would be full again


def test_the_bucket_refills_at_the_rate_on_redis_clock(redis_client, namespace):
    limiter = SharedRateLimiter(redis_client, namespace, per_minute=600, burst=1)  # one token per 0.1 s
    assert limiter.take("carol") == 0.0
    assert 0.0 < limiter.take("carol") <= 0.1
    time.sleep(0.15)
    assert limiter.take("carol") == 0.0


def test_wrong_keys_lock_an_address_out_on_every_replica(redis_client, namespace):
    replica_a = SharedFailedAttempts(redis_client, namespace, limit=3, window_s=60, tracked=100)
    replica_b = SharedFailedAttempts(redis_client, namespace, limit=3, window_s=60, tracked=100)
    address = replica_a.address_of(("203.0.113.9", 5555))
    assert [replica_a.fail(address), replica_b.fail(address), replica_a.fail(address)] == [False, False, True]
    assert 59.0 <= replica_b.retry_after(address) <= 60.0  # the replica that saw one failure refuses too
    assert replica_a.retry_after("203.0.113.10") == 0.0
    net = replica_a.address_of(("2001:db8::1", 1))  # one host's /64 counts as one address
    assert net == replica_b.address_of(("2001:db8::ffff", 1))


def test_tracked_addresses_are_bounded_in_redis(redis_client, namespace):
    failed = SharedFailedAttempts(redis_client, namespace, limit=2, window_s=60, tracked=2)
    for address in ("198.51.100.1", "198.51.100.2", "198.51.100.3"):
        failed.fail(address)
        failed.fail(address)
    assert redis_client.hlen(failed.times_key) == 2  # the least recently failing address is forgotten
    assert failed.retry_after("198.51.100.1") == 0.0 and failed.retry_after("198.51.100.3") > 0
    assert 0 < redis_client.pttl(failed.times_key) <= 60_000


def _replica(cfg: Configuration, api_keys, owners) -> TestClient:
    app = create_app(graph=RunnableLambda(lambda x: x), cfg=cfg, store=object(), api_keys=api_keys, owners=owners,
                     shared_limits=True)
    return TestClient(app, client=("198.51.100.77", 40000))


def test_a_caller_spread_over_two_apps_gets_one_rate(keel_config, namespace):
    """Requests refused as bad JSON still take a token, so this measures the gate alone: with the
    limits in each process the two apps would let 2 x burst through."""
    cfg = Configuration(keel_home=keel_config.keel_home, index_name=namespace, rate_limit_burst=5,
                        rate_limit_per_minute=1, auth_failure_limit=3)
    api_keys, keys, owners = keys_and_owners()
    replicas = [_replica(cfg, api_keys, owners), _replica(cfg, api_keys, owners)]
    codes = [replicas[i % 2].post("/chat/invoke", content=b"{", headers=bearer(keys["alice"])).status_code
             for i in range(12)]
    assert codes.count(400) == 5 and codes.count(429) == 7, codes
    assert replicas[0].post("/chat/invoke", content=b"{", headers=bearer(keys["mallory"])).status_code == 400

    wrong = [replicas[i % 2].get("/me", headers=bearer("keel_wrong")).status_code for i in range(5)]
    assert wrong == [401, 401, 401, 429, 429], wrong  # three wrong keys in all, then refused everywhere


def test_a_conversation_being_answered_is_marked_for_every_replica(redis_client, namespace):
    from keel.server.answering import SharedConversationsAnswering

    replica_a = SharedConversationsAnswering(redis_client, namespace, mark_s=2, wait_s=3)
    replica_b = SharedConversationsAnswering(redis_client, namespace, mark_s=2, wait_s=3)
    marked = replica_a.try_mark(["alice/standup"])
    assert marked is not None and marked.token
    assert replica_b.try_mark(["alice/standup"]) is None
    assert replica_b.try_mark(["alice/other", "alice/standup"]) is None  # all or none
    other = replica_b.try_mark(["alice/other"])
    assert other is not None
    key = replica_a.key("alice/standup")
    assert "alice" not in key and 0 < redis_client.pttl(key) <= 2000  # lapses unless renewed
    time.sleep(1.0)
    replica_a.renew(marked)
    assert redis_client.pttl(key) > 1500  # the running turn keeps it
    replica_b.release(other)
    replica_b.release(type(marked)(marked.keys, "not-the-token"))  # another turn's release leaves it alone
    assert redis_client.exists(key)
    replica_a.release(marked)
    assert not redis_client.exists(key) and replica_b.try_mark(["alice/standup"]) is not None


def test_a_waiting_question_runs_once_a_dead_replicas_mark_lapses_and_not_beside_a_live_turn(redis_client, namespace):
    import asyncio

    from keel.server.answering import SharedConversationsAnswering
    from keel.server.settings_policy import RequestRefused

    live = SharedConversationsAnswering(redis_client, namespace, mark_s=1.0, wait_s=1.5)
    dead = SharedConversationsAnswering(redis_client, namespace, mark_s=1.0, wait_s=1.5)
    retry = SharedConversationsAnswering(redis_client, namespace, mark_s=1.0, wait_s=1.5)

    async def scenario():
        assert dead.try_mark(["bob/killed"]) is not None  # its replica dies: never renewed, never released
        started = time.monotonic()
        marked = await retry.mark(["bob/killed"])  # the client's retry waits for the lapse, then goes through
        assert 0.5 <= time.monotonic() - started <= 1.5
        retry.release(marked)
        async with live.answering(["bob/busy"]):  # renewed while it runs, past its mark's lifetime
            started = time.monotonic()
            with pytest.raises(RequestRefused) as refused:
                await retry.mark(["bob/busy"])
            assert refused.value.status == 409 and time.monotonic() - started >= 1.5
        assert (await retry.mark(["bob/busy"])) is not None  # free once its turn ended

    asyncio.run(scenario())
