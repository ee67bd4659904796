"""Guessing API keys: wrong keys are bounded per client address (then a 429 with Retry-After, the
key not even checked), and checking a key is one digest looked up through an index, however many
users there are. Fakes (in-memory keys, a settable clock); the index on the real Mongo-wire server
is checked in tests/test_users_cli.py."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from langchain_core.runnables import RunnableLambda

from keel.core.configuration import Configuration
from keel.server.app import create_app
from keel.server.auth import ApiKeys, hash_key
from keel.server.limits import FailedAttempts
from tests.serving_fakes import InMemoryCollection, bearer, keys_and_owners


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_wrong_keys_lock_an_address_out_until_the_oldest_leaves_the_window():
    clock = Clock()
    failed = FailedAttempts(limit=3, window_s=60.0, tracked=100, clock=clock)
    assert failed.fail("203.0.113.5") is False
    clock.now += 5
    assert failed.fail("203.0.113.5") is False
    assert failed.retry_after("203.0.113.5") == 0.0
    clock.now += 5
    assert failed.fail("203.0.113.5") is True  # the third within the window locks it
    assert failed.retry_after("203.0.113.5") == pytest.approx(50.0)  # the first leaves the window at +60
    assert failed.retry_after("198.51.100.7") == 0.0  # other addresses are not touched
    clock.now += 50
    assert failed.retry_after("203.0.113.5") == 0.0  # the first aged out: one more try
    failed.fail("203.0.113.5")
    assert failed.retry_after("203.0.113.5") == pytest.approx(5.0)  # locked again until the second ages out


def test_ipv6_clients_count_per_network_and_memory_is_bounded():
    failed = FailedAttempts(limit=2, window_s=60.0, tracked=3, ipv6_prefix=64, clock=Clock())
    first, same_net, other_net = "2001:db8:1:2::a", "2001:db8:1:2:ffff::b", "2001:db8:1:3::a"
    assert failed.address_of((first, 443)) == failed.address_of((same_net, 80)) == "2001:db8:1:2::/64"
    failed.fail(failed.address_of((first, 443)))
    failed.fail(failed.address_of((same_net, 80)))
    assert failed.retry_after(failed.address_of((same_net, 1))) > 0
    assert failed.retry_after(failed.address_of((other_net, 1))) == 0.0
    assert failed.address_of(("::ffff:203.0.113.5", 1)) == "203.0.113.5"  # IPv4 seen through IPv6
    assert failed.address_of(None) == "unknown" and failed.address_of(("testclient", 1)) == "testclient"
    for host in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
        failed.fail(host)
    assert len(failed._failures) == 3  # the least recently failing address was forgotten
    assert failed.retry_after("2001:db8:1:2::/64") == 0.0


def test_a_zero_limit_turns_the_bound_off():
    failed = FailedAttempts(limit=0, window_s=60.0, tracked=10)
    for _ in range(100):
        failed.fail("203.0.113.5")
    assert failed.retry_after("203.0.113.5") == 0.0


class CountingCollection(InMemoryCollection):
    def __init__(self):
        super().__init__()
        self.queries = []

    def find_one(self, query):
        self.queries.append(("find_one", query))
        return super().find_one(query)

    def find(self, query):
        self.queries.append(("find", query))
        return super().find(query)


def test_a_key_is_checked_by_one_indexed_lookup_of_its_digest_not_against_every_user(monkeypatch):
    collection = CountingCollection()
    keys = ApiKeys(collection, cache_ttl_s=0.0)
    keys.ensure_index()
    assert list(collection.indexes.values()) == [{"key": "key_hash", "unique": True}]
    issued = {name: keys.add(name) for name in (f"user{i}" for i in range(200))}
    hashed = []
    monkeypatch.setattr("keel.server.auth.hash_key", lambda key: hashed.append(key) or hash_key(key))
    collection.queries.clear()
    assert keys.verify(issued["user123"]).name == "user123"
    assert keys.verify("keel_" + "x" * 43) is None
    assert hashed == [issued["user123"], "keel_" + "x" * 43]  # one digest per check
    assert collection.queries == [("find_one", {"key_hash": hash_key(issued["user123"]), "revoked": False}),
                                  ("find_one", {"key_hash": hash_key("keel_" + "x" * 43), "revoked": False})]


def app_with(cfg: Configuration):
    api_keys, keys, owners = keys_and_owners()
    calls = []
    verify = api_keys.verify
    api_keys.verify = lambda key: calls.append(key) or verify(key)
    graph = RunnableLambda(lambda state: {"answer": "ok", "status": "success", "messages": []})
    app = create_app(graph=graph, cfg=cfg, store=object(), api_keys=api_keys, owners=owners)
    return app, keys, calls


def test_an_address_sending_wrong_keys_gets_429_with_retry_after_and_its_keys_are_not_checked():
    app, keys, calls = app_with(Configuration(auth_failure_limit=3, auth_failure_window_s=120.0))
    guesser = TestClient(app, client=("203.0.113.5", 40000))
    neighbour = TestClient(app, client=("198.51.100.7", 40000))
    assert guesser.get("/chat/input_schema").status_code == 401  # no key at all: not a guess
    for attempt in range(3):
        response = guesser.get("/chat/input_schema", headers=bearer(f"keel_guess{attempt}"))
        assert response.status_code == 401, response.text
    checked = len(calls)
    guess = guesser.get("/chat/input_schema", headers=bearer("keel_guess3"))
    unseen = guesser.get("/chat/input_schema", headers=bearer(keys["alice"]))  # a right key never seen signing in
    for locked in (guess, unseen):
        assert locked.status_code == 429 and 1 <= int(locked.headers["Retry-After"]) <= 120
        assert locked.json()["request_id"] == locked.headers["X-Request-ID"] and "wrong API keys" in locked.json()["detail"]
    assert len(calls) == checked  # refused before the key store was asked
    assert guesser.get("/healthz").status_code == 200  # /healthz stays open
    assert neighbour.get("/chat/input_schema", headers=bearer(keys["alice"])).status_code == 200


def test_a_user_who_signed_in_recently_is_not_locked_out_by_a_guesser_behind_the_same_address():
    app, keys, calls = app_with(Configuration(auth_failure_limit=3, auth_failure_window_s=120.0))
    office = TestClient(app, client=("203.0.113.5", 40000))  # one NAT: a user and a guesser
    assert office.get("/chat/input_schema", headers=bearer(keys["alice"])).status_code == 200
    for attempt in range(3):
        assert office.get("/chat/input_schema", headers=bearer(f"keel_guess{attempt}")).status_code == 401
    checked = len(calls)
    assert office.get("/chat/input_schema", headers=bearer("keel_guess9")).status_code == 429
    assert len(calls) == checked, "a new guess is still refused unchecked"
    assert office.get("/chat/input_schema", headers=bearer(keys["alice"])).status_code == 200
    assert len(calls) == checked + 1, "the recent user's key is checked, once"


def test_the_bound_is_a_setting_and_a_correct_key_never_counts():
    app, keys, _ = app_with(Configuration(auth_failure_limit=50))
    client = TestClient(app, client=("203.0.113.9", 40000))
    for _ in range(20):
        assert client.get("/chat/input_schema", headers=bearer("keel_wrong")).status_code == 401
        assert client.get("/chat/input_schema", headers=bearer(keys["mallory"])).status_code == 200
    assert Configuration().auth_failure_limit == 10 and Configuration().auth_failure_window_s == 300.0


def test_known_keys_age_out_keep_only_digests_and_are_bounded():
    from keel.server.limits import KnownKeys

    now = [0.0]
    known = KnownKeys(max_age_s=60, tracked=2, clock=lambda: now[0])
    known.remember("keel_alice")
    assert known.known("keel_alice") and not known.known("keel_bob")
    assert "keel_alice" not in repr(known._seen)  # digests only
    now[0] = 61
    assert not known.known("keel_alice")
    for key in ("a", "b", "c"):
        known.remember(key)
    assert not known.known("a") and known.known("b") and known.known("c")
