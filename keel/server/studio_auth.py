"""Custom auth for LangGraph Studio / ``langgraph dev`` (registered in langgraph.json): the same
API keys as ``keel serve``, and the same rules.

* every request needs a key (``Authorization: Bearer <key>`` or ``X-API-Key``); a client address
  that sent ``auth_failure_limit`` wrong keys within ``auth_failure_window_s`` gets a 429 with
  Retry-After, its key not checked (the same bound as ``keel serve``, counted in the deployment's
  Redis with it: keel/server/shared_limits.py);
* threads, runs and crons are stamped with their owner and every read is filtered by it, so
  another user's thread is not found; the one exception is a reviewer (role ``reviewer`` or
  ``admin``) and a thread paused for their review, which they may read and resume
  (keel/server/studio_review.py);
* a run is checked like a chat body of ``keel serve`` (keel/server/studio_runs.py): one question within
  ``max_question_chars``, only the request settings (keel/server/settings_policy.py) in its config or
  context, its user id always the caller's, ``recursion_limit`` at most
  ``max_request_recursion_limit``, no command but a reviewer's resume; a ``checkpoint_id``
  (Studio's time travel) is allowed in the caller's own thread;
* runs are started at most at the caller's rate (``rate_limit_per_minute``, ``rate_limit_burst``;
  429 with Retry-After), the same token bucket in Redis as ``keel serve`` (keel/server/shared_limits.py),
  so a user's runs and their requests to every replica draw on one rate;
* the graph's assistants may be read by everyone and changed by admins only;
* store items live under the caller's own namespace.

What Studio's auth cannot enforce, because LangGraph's server calls these handlers only when a
request arrives (authenticate, then one hook per resource and action), never when a run ends:

* generations at once per user (``max_concurrent_generations``), a queue bound
  (``max_queued_generations``) and a time limit (``generation_timeout_s``): no hook learns that a
  run finished, so in-flight runs cannot be counted. LangGraph's server runs background runs
  ``N_JOBS_PER_WORKER`` at a time for everyone together (``langgraph dev`` sets 1 unless
  ``--n-jobs-per-worker`` says more), the others wait in its queue; this hook's rate bounds how
  many one user can put there. Its run time limit is ``BG_JOB_TIMEOUT_SECS`` (a day by default):
  set it to ``generation_timeout_s`` where that matters;
* the body size (``max_request_bytes``): the hooks see the parsed request, not its bytes;
* state edits (``POST /threads/{id}/state``, Studio's "edit state"): the ``threads`` update hook is
  given only the thread's id, not the values written, so an owner can write any state into their
  own thread, and a run from that checkpoint (no new input) answers from it. It stays within the
  owner's thread and the graph's own bounds (``max_attempts``, token budgets).
"""

from __future__ import annotations

import asyncio
import logging
import math
from functools import lru_cache
from typing import Any

from langgraph_sdk import Auth
from starlette.exceptions import HTTPException as StarletteHTTPException

from keel.core.configuration import Configuration
from keel.server.auth import ApiKeys, credential_from_headers
from keel.server.limits import FailedAttempts, RateLimiter
from keel.server.settings_policy import RequestRefused
from keel.server.shared_limits import shared_limits
from keel.server.studio_review import (
    check_review_resume,
    held_in_studio,
    is_reviewer,
    retire_held_turns,
)
from keel.server.studio_runs import check_run
from keel.stores.review_queue import ReviewQueue

auth = Auth()
ADMIN_PERMISSION = "role:admin"
log = logging.getLogger("keel.server")


@lru_cache(maxsize=1)
def server_config() -> Configuration:
    """The LangGraph server's configuration, read once from its environment."""
    return Configuration()


@lru_cache(maxsize=1)
def api_keys() -> ApiKeys:
    """The API keys LangGraph Studio's requests are checked against, loaded once."""
    return ApiKeys.from_config(server_config())


@lru_cache(maxsize=1)
def _limits() -> tuple[RateLimiter, FailedAttempts]:
    return shared_limits(server_config())


@lru_cache(maxsize=1)
def review_queue() -> ReviewQueue:
    """The deployment's review queue, where the graph files the turns it holds (opened on first use)."""
    return ReviewQueue.from_settings(server_config(), server_config())


def failed_auth() -> FailedAttempts:
    """The failed-authentication counter that slows down key guessing."""
    return _limits()[1]


def run_rate() -> RateLimiter:
    """The per-user rate limit on runs."""
    return _limits()[0]


@auth.authenticate
async def authenticate(headers: dict, scope: dict | None = None) -> Auth.types.MinimalUserDict:
    """The caller named by their API key; 401 without a valid one, 429 from an address that sent
    too many wrong ones. LangGraph's server passes ``scope`` (the ASGI scope: the client address)
    because this handler names it."""
    failed = failed_auth()
    address = failed.address_of((scope or {}).get("client"))
    wait = await asyncio.to_thread(failed.retry_after, address)  # asks Redis
    if wait:
        # LangGraph's auth layer answers an Auth.exceptions.HTTPException other than 401/403 from
        # this handler with a 500; a Starlette HTTPException reaches its error handler, status and
        # Retry-After kept.
        raise StarletteHTTPException(status_code=429, detail="too many wrong API keys from this address; "
                                     "try again later", headers={"Retry-After": str(max(1, math.ceil(wait)))})
    plain = {_text(name).lower(): _text(value) for name, value in (headers or {}).items()}
    key = credential_from_headers(plain)
    principal = await asyncio.to_thread(_verify, key) if key else None
    if principal is None:
        if key and await asyncio.to_thread(failed.fail, address):
            log.warning("studio client %s sent %d wrong API keys within %.0fs: refused until they age out",
                        address, failed.limit, failed.window_s)
        raise Auth.exceptions.HTTPException(status_code=401, detail="a valid API key is required")
    return {"identity": principal.name, "display_name": principal.name, "is_authenticated": True,
            "permissions": [f"role:{principal.role}"]}


def _verify(key: str):
    """In a worker thread: the first call opens the key store (a connection, the index), and no
    database call may block LangGraph's event loop."""
    return api_keys().verify(key)


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """Threads, runs and crons: stamped with the caller as owner; reads see only their own."""
    _stamp_owner(ctx, value)
    return {"owner": ctx.user.identity}


@auth.on.threads.create_run
async def checked_run(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A run in the caller's own thread, at the caller's rate, checked like a chat body
    (keel/server/studio_runs.py). LangGraph's server calls this before the run is stored, so a refused
    run costs nothing."""
    _stamp_owner(ctx, value)
    wait = await asyncio.to_thread(run_rate().take, ctx.user.identity)  # asks Redis
    if wait:
        raise Auth.exceptions.HTTPException(status_code=429, detail="rate limit exceeded; slow down",
                                            headers={"Retry-After": str(max(1, math.ceil(wait)))})
    kwargs = value.get("kwargs")
    if not isinstance(kwargs, dict):
        kwargs = value["kwargs"] = {}
    resuming = kwargs.get("command") is not None and is_reviewer(ctx.permissions)
    try:
        if resuming:  # the review queue, not the thread's owner, decides (asks MongoDB)
            await asyncio.to_thread(check_review_resume, kwargs, value.get("thread_id"), server_config(),
                                    ctx.user.identity, review_queue())
        else:
            check_run(kwargs, value.get("thread_id"), server_config(), ctx.user.identity)
    except RequestRefused as refused:
        raise Auth.exceptions.HTTPException(status_code=refused.status, detail=refused.message) from None
    if resuming:
        return None
    if kwargs.get("input") is not None and server_config().review_mode != "off":  # a new question
        await asyncio.to_thread(retire_held_turns, review_queue(), value.get("thread_id"), ctx.user.identity)
    return {"owner": ctx.user.identity}


@auth.on.threads.read
async def own_or_held_for_review(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A thread, its state, history and runs: the owner's, and a reviewer's while a turn in it waits
    for review (asks MongoDB's review queue)."""
    if is_reviewer(ctx.permissions) and await asyncio.to_thread(held_in_studio, review_queue(),
                                                                value.get("thread_id")):
        return None
    return {"owner": ctx.user.identity}


@auth.on.threads.create
async def own_new_thread(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A new thread is the caller's. A copy (LangGraph's server passes no metadata for one) is refused
    to reviewer keys: they read held threads of other users, and a copy would keep such a thread's
    owner and conversation."""
    if "metadata" not in value and is_reviewer(ctx.permissions):
        raise Auth.exceptions.HTTPException(status_code=403, detail="reviewer and admin keys do not copy threads")
    _stamp_owner(ctx, value)
    return {"owner": ctx.user.identity}


@auth.on.threads.delete
async def own_thread_deleted(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """The owner's thread only; a turn of theirs waiting for review there is retired with it."""
    if server_config().review_mode != "off":
        await asyncio.to_thread(retire_held_turns, review_queue(), value.get("thread_id"), ctx.user.identity)
    return {"owner": ctx.user.identity}


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """The deployment's assistants: anyone may use them, only an admin may change them."""
    return ctx.action in ("read", "search") or ADMIN_PERMISSION in (ctx.permissions or ())


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: dict) -> None:
    """Store items under the caller's own namespace only."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)


def _stamp_owner(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The caller as owner, written into the metadata dict itself: LangGraph's server keeps using
    the dict it passed (a new dict in ``value`` would never reach the stored thread or run)."""
    if isinstance(value, dict) and ctx.action in ("create", "create_run", "update"):
        metadata = value.get("metadata")
        if isinstance(metadata, dict):
            metadata["owner"] = ctx.user.identity
        else:
            value["metadata"] = {"owner": ctx.user.identity}
