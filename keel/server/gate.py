"""The gate every request passes before the app: who asks, whether they may, and how much.

In order: a request id; the credential (401 without a valid one; /healthz and the web page's
shell and assets, keel/server/web_assets.py, are open and hold no data); for work routes (chat
and upload) the per-user rate (429), the body size before and while reading it (413), the body's
question, settings and ids (400/403), the conversation's owner (404 for anyone else's), the
conversation being free (a question sent while it answers another waits, then 409), a generation
slot (503 with Retry-After when the queue is full), and finally a time limit and a watch on the
client: when it disconnects the work is cancelled. Cancelling reaches the model calls running in
worker threads (keel/models/cancellation.py), and the slot is held until they have stopped (at most
``cancel_grace_s``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field

from keel.core.configuration import Configuration
from keel.models.cancellation import CancelToken, bind, unbind
from keel.server.answering import ConversationsAnswering, conversations_answering
from keel.server.auth import ApiKeys, credential_from_headers
from keel.server.errors import REQUEST_ID_HEADER, error_response, new_request_id
from keel.server.json_body import BadJSON, parse_json_body
from keel.server.limits import Busy, FailedAttempts, KnownKeys, RateLimited, RateLimiter, WorkSlots
from keel.server.ownership import ThreadOwners
from keel.server.request_checks import CHAT_ROUTES, INGEST_ROUTE, check_chat_body, check_ingest_body
from keel.server.settings_policy import RequestRefused
from keel.server.shared_limits import shared_limits
from keel.server.web_assets import TOOL_PAGE_HEADERS, is_open_page, is_tool_page
from keel.stores.tag_filters import validate_tag_id

log = logging.getLogger("keel.server")
OPEN_PATHS = frozenset({"/healthz"})
DEV_USER = "default"
# One WWW-Authenticate header per scheme: a browser ignores a single header that names two, and then
# never offers its sign-in dialog for Basic (the playground's and /docs' way in).
CHALLENGES = ('Bearer realm="keel"', 'Basic realm="keel"')


class ClientGone(Exception):
    """The client disconnected before its request was read."""


@dataclass
class Guard:
    """What the gate enforces, built once per app from the deployment's configuration."""

    cfg: Configuration
    api_keys: ApiKeys | None  # None: authentication off (loopback development only)
    owners: ThreadOwners
    rate: RateLimiter
    generations: WorkSlots  # this replica's own: how much work its process takes on at once
    ingests: WorkSlots
    failed_auth: FailedAttempts  # wrong keys per client address
    answering: ConversationsAnswering  # which conversations are answering a question (keel/server/answering.py)
    known_keys: KnownKeys = field(default_factory=KnownKeys)  # keys that signed in recently (this process)

    @classmethod
    def from_config(cls, cfg: Configuration, api_keys: ApiKeys | None, owners: ThreadOwners,
                    shared: bool = False) -> Guard:
        """``shared``: the per-user rate and the wrong-key bound are kept in the deployment's Redis,
        one count for every replica (keel/server/shared_limits.py), and so are the conversations being
        answered (keel/server/answering.py); otherwise in this process."""
        if shared:
            rate, failed_auth = shared_limits(cfg)
        else:
            rate, failed_auth = RateLimiter(cfg.rate_limit_per_minute, cfg.rate_limit_burst), FailedAttempts.from_config(cfg)
        return cls(
            cfg=cfg, api_keys=api_keys, owners=owners,
            rate=rate,
            generations=WorkSlots(cfg.max_concurrent_generations, cfg.max_queued_generations,
                                  cfg.generation_queue_timeout_s, cfg.busy_retry_after_s),
            ingests=WorkSlots(cfg.max_concurrent_ingests, cfg.max_queued_generations,
                              cfg.generation_queue_timeout_s, cfg.busy_retry_after_s),
            failed_auth=failed_auth,
            answering=conversations_answering(cfg, shared),
        )


class RequestGate:
    """ASGI middleware applying a ``Guard`` to every HTTP request."""

    def __init__(self, app, guard: Guard):
        self.app = app
        self.guard = guard

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request_id = new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        send = _with_request_id(send, request_id, scope.get("path", ""))
        try:
            await self._gate(scope, receive, send, state)
        except RequestRefused as refused:
            response = error_response(refused.status, refused.message, request_id)
            if refused.status == 401:
                for challenge in CHALLENGES:
                    response.headers.append("WWW-Authenticate", challenge)
            await response(scope, receive, send)
        except Busy as busy:
            headers = {"Retry-After": str(max(1, round(busy.retry_after_s)))}
            await error_response(busy.status, busy.message, request_id, headers)(scope, receive, send)
        except ClientGone:
            log.info("request %s: client disconnected before sending its body", request_id)

    async def _gate(self, scope, receive, send, state) -> None:
        path = scope["path"]
        if path in OPEN_PATHS or is_open_page(scope["method"], path):  # the web page's shell: no data
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        user_id = await self._authenticate(headers, scope.get("client"))
        state["user_id"] = user_id
        is_work = scope["method"] == "POST" and (path in CHAT_ROUTES or path == INGEST_ROUTE)
        if not is_work:
            return await self.app(scope, receive, send)
        wait = await asyncio.to_thread(self.guard.rate.take, user_id or DEV_USER)  # may ask Redis
        if wait:
            raise RateLimited(wait, "rate limit exceeded; slow down")
        limit = self._body_limit(path)
        body = await _read_body(receive, headers, limit)
        try:
            parsed = parse_json_body(body)
        except BadJSON as bad:
            raise RequestRefused(400, str(bad)) from None
        if user_id is None:  # authentication off: the body names the user, as before
            user_id = self._dev_user(parsed, path)
            state["user_id"] = user_id
        checked = (check_ingest_body(parsed, self.guard.cfg, user_id) if path == INGEST_ROUTE
                   else check_chat_body(path, parsed, self.guard.cfg, user_id))
        threads = {}  # the caller's conversation ids -> the threads they are kept under (their own)
        for conversation in checked.thread_ids:
            threads[conversation] = await asyncio.to_thread(self.guard.owners.claim, conversation, user_id)
            if threads[conversation] is None:  # only a conversation from before per-user ids
                raise RequestRefused(409, "this conversation id is in use from an earlier version; choose another")
        slots = self.guard.ingests if path == INGEST_ROUTE else self.guard.generations
        timeout = self.guard.cfg.ingest_timeout_s if path == INGEST_ROUTE else self.guard.cfg.generation_timeout_s
        answered = list(threads.values()) if path != INGEST_ROUTE else []
        async with self.guard.answering.answering(answered):  # one question at a time in a conversation
            await slots.acquire()
            try:
                await self._run(scope, receive, send, json.dumps(checked.kept_under(threads)).encode("utf-8"),
                                timeout, state["request_id"])
            finally:
                slots.release()

    async def _authenticate(self, headers: dict[str, str], client) -> str | None:
        """The key's user; 401 without a valid key, 429 (its key not checked) from a client address
        that sent ``auth_failure_limit`` wrong keys within ``auth_failure_window_s``, unless the key
        signed in recently (``KnownKeys``): one guesser behind a NAT does not lock out its users."""
        if self.guard.api_keys is None:
            return None
        failed = self.guard.failed_auth
        address = failed.address_of(client)
        key = credential_from_headers(headers)
        wait = await asyncio.to_thread(failed.retry_after, address)  # may ask Redis
        if wait and not (key and self.guard.known_keys.known(key)):  # a recent user's key is still checked
            raise RateLimited(wait, "too many wrong API keys from this address; try again later")
        principal = await asyncio.to_thread(self.guard.api_keys.verify, key) if key else None
        if principal is None:
            if key and await asyncio.to_thread(failed.fail, address):
                log.warning("client %s sent %d wrong API keys within %.0fs: refused until they age out",
                            address, failed.limit, failed.window_s)
            raise RequestRefused(401, "a valid API key is required (Authorization: Bearer <key>)")
        self.guard.known_keys.remember(key)
        return principal.name

    def _dev_user(self, body, path: str) -> str:
        if path == INGEST_ROUTE:
            named = body.get("user_id") if isinstance(body, dict) else None
        else:
            config = body.get("config") if isinstance(body, dict) else None
            configs = config if isinstance(config, list) else [config]
            names = {(c.get("configurable") or {}).get("user_id") for c in configs if isinstance(c, dict)}
            named = names.pop() if len(names) == 1 else None
        try:
            return validate_tag_id("user_id", named) if named is not None else DEV_USER
        except ValueError:
            raise RequestRefused(400, "user_id is not a valid id") from None

    def _body_limit(self, path: str) -> int:
        cfg = self.guard.cfg
        if path == INGEST_ROUTE:
            return cfg.max_file_bytes * 4 // 3 + cfg.upload_overhead_bytes
        return cfg.max_request_bytes

    async def _run(self, scope, receive, send, body: bytes, timeout_s: float, request_id: str) -> None:
        """Run the app on the checked body; cancel it when the client leaves or time runs out."""
        gone = asyncio.Event()
        delivered = False
        started = stopped = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def tracked_send(message):
            nonlocal started
            if stopped:  # the client already has its 504 (or is gone): nothing more goes out
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def watch():
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        token = CancelToken()
        bound = bind(token)  # the app's task copies the context, and so do the threads it runs nodes in
        try:
            work = asyncio.ensure_future(self.app(scope, replay, tracked_send))
        finally:
            unbind(bound)
        try:
            watcher = asyncio.ensure_future(watch())
            try:
                done, _ = await asyncio.wait({work, watcher}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                watcher.cancel()
            if work in done:
                return work.result()
            stopped = True
            work.cancel()
            if watcher in done:
                log.info("request %s: client disconnected; its work was cancelled", request_id)
            else:
                log.warning("request %s: stopped after %.1fs", request_id, timeout_s)
                if not started:
                    await error_response(504, "the request took too long and was stopped", request_id)(scope, replay, send)
            await asyncio.gather(work, return_exceptions=True)
        finally:
            if not work.done():
                work.cancel()
            await self._until_stopped(token, request_id)

    async def _until_stopped(self, token: CancelToken, request_id: str) -> None:
        """The request is over: stop whatever model call of it still runs in a worker thread (a
        cancelled task does not stop its threads) and keep the caller's slot until it has stopped,
        at most ``cancel_grace_s``, so the limit on generations at once holds for real work."""
        token.cancel()
        if not token.running:
            return
        grace = self.guard.cfg.cancel_grace_s
        log.info("request %s: waiting for its model call to stop", request_id)
        if not await token.stopped(grace):
            log.warning("request %s: its model call did not stop within %.1fs of the cancel; its slot is freed anyway",
                        request_id, grace)


async def _read_body(receive, headers: dict[str, str], limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed ``limit``: by Content-Length
    before anything is read, else while it streams in."""
    declared = headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise RequestRefused(400, "invalid Content-Length")
        if int(declared) > limit:
            raise RequestRefused(413, f"request body larger than {limit} bytes")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise RequestRefused(413, f"request body larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _with_request_id(send, request_id: str, path: str = ""):
    """``send`` adding the request id to the response, and to the playground's and the API docs'
    pages their security headers (keel/server/web_assets.py)."""
    header = (REQUEST_ID_HEADER.lower().encode("latin-1"), request_id.encode("latin-1"))
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in TOOL_PAGE_HEADERS.items()] \
        if is_tool_page(path) else []
    replaced = {header[0], *(name for name, _ in extra)}

    async def send_with_id(message):
        if message["type"] == "http.response.start":
            existing = [h for h in message.get("headers", []) if h[0].lower() not in replaced]
            message = {**message, "headers": [*existing, header, *extra]}
        await send(message)

    return send_with_id
