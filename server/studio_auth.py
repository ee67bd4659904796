"""Custom auth for LangGraph Studio / ``langgraph dev`` (registered in langgraph.json): the same
API keys as ``keel serve``, and the same rules.

* every request needs a key (``Authorization: Bearer <key>`` or ``X-API-Key``); a client address
  that sent ``auth_failure_limit`` wrong keys within ``auth_failure_window_s`` gets a 429 with
  Retry-After, its key not checked (the same bound as ``keel serve``, server/limits.py);
* threads, runs and crons are stamped with their owner and every read is filtered by it, so
  another user's thread is not found;
* a run may set only the request settings (server/settings_policy.py) in its config or context,
  and its user id is always the caller's;
* the graph's assistants may be read by everyone and changed by admins only;
* store items live under the caller's own namespace.
"""

from __future__ import annotations

import asyncio
import logging
import math
from functools import lru_cache
from typing import Any

from langgraph_sdk import Auth
from starlette.exceptions import HTTPException as StarletteHTTPException

from graph.configuration import Configuration
from server.auth import ApiKeys, credential_from_headers
from server.limits import FailedAttempts
from server.settings_policy import RequestRefused, check_request_settings

auth = Auth()
ADMIN_PERMISSION = "role:admin"
log = logging.getLogger("keel.server")


@lru_cache(maxsize=1)
def server_config() -> Configuration:
    return Configuration()


@lru_cache(maxsize=1)
def api_keys() -> ApiKeys:
    return ApiKeys.from_config(server_config())


@lru_cache(maxsize=1)
def failed_auth() -> FailedAttempts:
    return FailedAttempts.from_config(server_config())


@auth.authenticate
async def authenticate(headers: dict, scope: dict | None = None) -> Auth.types.MinimalUserDict:
    """The caller named by their API key; 401 without a valid one, 429 from an address that sent
    too many wrong ones. LangGraph's server passes ``scope`` (the ASGI scope: the client address)
    because this handler names it."""
    failed = failed_auth()
    address = failed.address_of((scope or {}).get("client"))
    wait = failed.retry_after(address)
    if wait:
        # LangGraph's auth layer answers an Auth.exceptions.HTTPException other than 401/403 from
        # this handler with a 500; a Starlette HTTPException reaches its error handler, status and
        # Retry-After kept.
        raise StarletteHTTPException(status_code=429, detail="too many wrong API keys from this address; "
                                     "try again later", headers={"Retry-After": str(max(1, math.ceil(wait)))})
    plain = {_text(name).lower(): _text(value) for name, value in (headers or {}).items()}
    key = credential_from_headers(plain)
    principal = await asyncio.to_thread(api_keys().verify, key) if key else None
    if principal is None:
        if key and failed.fail(address):
            log.warning("studio client %s sent %d wrong API keys within %.0fs: refused until they age out",
                        address, failed.limit, failed.window_s)
        raise Auth.exceptions.HTTPException(status_code=401, detail="a valid API key is required")
    return {"identity": principal.name, "display_name": principal.name, "is_authenticated": True,
            "permissions": [f"role:{principal.role}"]}


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """Threads, runs and crons: stamped with the caller as owner; reads see only their own."""
    _stamp_owner(ctx, value)
    return {"owner": ctx.user.identity}


@auth.on.threads.create_run
async def checked_run(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A run in the caller's own thread, with only the settings a request may send."""
    _stamp_owner(ctx, value)
    kwargs = value.get("kwargs") or {}
    for place in ("config", "context"):
        holder = kwargs.get(place) or {}
        settings = holder.get("configurable") if place == "config" else holder
        try:
            checked = check_request_settings(_without_run_ids(settings), server_config())
        except RequestRefused as refused:
            raise Auth.exceptions.HTTPException(status_code=refused.status, detail=refused.message) from None
        if checked.get("user_id", ctx.user.identity) != ctx.user.identity:
            raise Auth.exceptions.HTTPException(status_code=403, detail="user_id does not match the credential")
        if place == "config":
            holder = {**holder, "configurable": {**(settings or {}), "user_id": ctx.user.identity}}
        else:
            holder = {**holder, "user_id": ctx.user.identity}
        kwargs[place] = holder
    value["kwargs"] = kwargs
    return {"owner": ctx.user.identity}


def _without_run_ids(settings: Any) -> Any:
    """The ids LangGraph's server puts in a run's configurable itself are not the caller's settings."""
    if not isinstance(settings, dict):
        return settings
    return {key: item for key, item in settings.items()
            if key not in ("thread_id", "assistant_id", "run_id", "graph_id") and not key.startswith(("__", "langgraph_"))}


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
    if isinstance(value, dict) and ctx.action in ("create", "create_run", "update"):
        metadata = value.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, dict) else {}
        metadata["owner"] = ctx.user.identity
        value["metadata"] = metadata
