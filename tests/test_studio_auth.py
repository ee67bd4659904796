"""LangGraph Studio / `langgraph dev` auth (server/studio_auth.py), called as LangGraph's server
calls it: the same API keys, owner-stamped and owner-filtered threads and runs, the request
settings allowlist on runs, admin-only assistant changes, per-user store namespaces."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth
from starlette.exceptions import HTTPException as StarletteHTTPException

import server.studio_auth as studio
from server.limits import FailedAttempts
from tests.serving_fakes import keys_and_owners

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def keys(monkeypatch):
    api_keys, keys, _ = keys_and_owners()
    monkeypatch.setattr(studio, "api_keys", lambda: api_keys)
    attempts = FailedAttempts(limit=10, window_s=300.0, tracked=100)
    monkeypatch.setattr(studio, "failed_auth", lambda: attempts)
    return keys


def ctx(resource: str, action: str, user: str = "alice", role: str = "user") -> Auth.types.AuthContext:
    return Auth.types.AuthContext(permissions=[f"role:{role}"], user=SimpleNamespace(identity=user),
                                  resource=resource, action=action)


def run(coroutine):
    return asyncio.run(coroutine)


def test_langgraph_json_registers_the_auth_object():
    spec = json.loads((ROOT / "langgraph.json").read_text())
    path, _, attribute = spec["auth"]["path"].partition(":")
    module = importlib.import_module(path.removeprefix("./").removesuffix(".py").replace("/", "."))
    registered = getattr(module, attribute)
    assert isinstance(registered, Auth) and registered._authenticate_handler is studio.authenticate
    assert ("threads", "create_run") in registered._handlers and registered._global_handlers


def test_authentication_uses_the_servers_api_keys(keys):
    user = run(studio.authenticate({b"authorization": f"Bearer {keys['alice']}".encode()}))
    assert user["identity"] == "alice" and user["permissions"] == ["role:user"]
    assert run(studio.authenticate({b"x-api-key": keys["mallory"].encode()}))["identity"] == "mallory"
    for headers in ({}, {b"authorization": b"Bearer keel_wrong"}):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            run(studio.authenticate(headers))
        assert refused.value.status_code == 401


def test_wrong_keys_from_one_address_are_429_with_retry_after_and_then_no_key_is_checked(keys, monkeypatch):
    assert "scope" in inspect.signature(studio.authenticate).parameters  # LangGraph passes what is named
    attempts = FailedAttempts(limit=2, window_s=60.0, tracked=10)
    monkeypatch.setattr(studio, "failed_auth", lambda: attempts)
    checked = []
    verify = studio.api_keys().verify
    monkeypatch.setattr(studio.api_keys(), "verify", lambda key: checked.append(key) or verify(key))
    guesser, neighbour = {"client": ("203.0.113.5", 5000)}, {"client": ("198.51.100.7", 5000)}
    for guess in ("keel_guess1", "keel_guess2"):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            run(studio.authenticate({b"authorization": f"Bearer {guess}".encode()}, guesser))
        assert refused.value.status_code == 401
    alice = {b"authorization": f"Bearer {keys['alice']}".encode()}
    with pytest.raises(StarletteHTTPException) as locked:  # the status LangGraph's server keeps (not a 500)
        run(studio.authenticate(alice, guesser))
    assert locked.value.status_code == 429 and 1 <= int(locked.value.headers["Retry-After"]) <= 60
    assert checked == ["keel_guess1", "keel_guess2"]  # the locked-out request's key was never looked up
    assert run(studio.authenticate(alice, neighbour))["identity"] == "alice"


def test_threads_are_stamped_with_their_owner_and_reads_filtered_by_it():
    created = {"metadata": {"owner": "mallory", "topic": "x"}}
    assert run(studio.owner_only(ctx("threads", "create"), created)) == {"owner": "alice"}
    assert created["metadata"] == {"owner": "alice", "topic": "x"}  # a forged owner is overwritten
    for action in ("read", "search", "update", "delete"):
        assert run(studio.owner_only(ctx("threads", action, user="mallory"), {})) == {"owner": "mallory"}


def test_a_run_may_set_only_request_settings_and_always_runs_as_its_caller():
    value = {"kwargs": {"config": {"configurable": {"thread_id": "t", "max_new_tokens": 64}},
                        "context": {"grounding_mode": "open"}}}
    assert run(studio.checked_run(ctx("threads", "create_run"), value)) == {"owner": "alice"}
    assert value["kwargs"]["config"]["configurable"]["user_id"] == "alice"
    assert value["kwargs"]["context"] == {"grounding_mode": "open", "user_id": "alice"}
    assert value["metadata"]["owner"] == "alice"
    for kwargs, status in (({"context": {"llm_threads": 3}}, 400),
                           ({"config": {"configurable": {"keel_home": "/tmp/x"}}}, 400),
                           ({"context": {"max_new_tokens": 3500}}, 400),
                           ({"context": {"user_id": "bob"}}, 403)):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            run(studio.checked_run(ctx("threads", "create_run"), {"kwargs": kwargs}))
        assert refused.value.status_code == status


def test_assistants_are_readable_by_all_and_changed_by_admins_only():
    assert run(studio.assistants(ctx("assistants", "search"), {})) is True
    assert run(studio.assistants(ctx("assistants", "update"), {})) is False
    assert run(studio.assistants(ctx("assistants", "create", role="admin"), {})) is True


def test_store_items_live_under_the_callers_namespace():
    value = {"namespace": ("bob", "notes")}
    run(studio.own_namespace(ctx("store", "put"), value))
    assert value["namespace"] == ("alice", "bob", "notes")
