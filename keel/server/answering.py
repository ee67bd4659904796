"""The conversations being answered: one question at a time in each.

Two turns at once in one conversation would both start from the same history, and the checkpointer
would keep only one of them. So a question sent to a conversation still answering one waits for it,
at most ``answering_wait_s``: when the first answer completes in that time the second runs after it
and both are kept, in order; otherwise it is refused with 409. It is never run beside the first.

``keel serve`` with replicas keeps the marks in the deployment's Redis, so a second question that a
round-robin balancer sends to another replica waits too. A mark lasts ``answering_mark_s`` and the
turn renews it while it runs: a replica killed mid-answer frees its conversations within that time,
and the client's retry (which waits at least that long) then goes through. While Redis cannot be
reached each process keeps its own marks, and says so once per outage.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass

from keel.server.settings_policy import RequestRefused
from keel.server.shared_limits import Outage, client_of, hashed, redis_errors

log = logging.getLogger("keel.server")

RENEWALS_PER_MARK = 3  # a mark is renewed this often within its lifetime: one late renewal loses nothing
CHECKS_PER_MARK = 20  # a waiting question looks this often per mark lifetime whether the conversation is free
BUSY = "a question is already being answered in this conversation; send the next one when that answer is complete"


@dataclass(frozen=True)
class Marked:
    """The marks one turn holds: ``token`` names them in Redis (None: marked in this process)."""

    keys: tuple[str, ...]
    token: str | None = None


class ConversationsAnswering:
    """This process's conversations being answered."""

    def __init__(self, mark_s: float, wait_s: float):
        self.mark_s = mark_s
        self.wait_s = wait_s
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def try_mark(self, thread_ids: list[str]) -> Marked | None:
        """Mark every thread, or none and None when one is already marked."""
        with self._lock:
            if any(thread in self._busy for thread in thread_ids):
                return None
            self._busy.update(thread_ids)
        return Marked(tuple(thread_ids))

    def renew(self, marked: Marked) -> None:
        """Keep the marks alive while the turn runs (a process's own marks need nothing)."""

    def release(self, marked: Marked) -> None:
        with self._lock:
            self._busy.difference_update(marked.keys)

    async def mark(self, thread_ids: list[str]) -> Marked:
        """The threads' marks, once every one is free; RequestRefused(409) after ``wait_s``."""
        deadline = time.monotonic() + self.wait_s
        while True:
            marked = await asyncio.to_thread(self.try_mark, list(thread_ids))  # may ask Redis
            if marked is not None:
                return marked
            if time.monotonic() >= deadline:
                raise RequestRefused(409, BUSY)
            await asyncio.sleep(min(self.mark_s / CHECKS_PER_MARK, max(0.0, deadline - time.monotonic())))

    @asynccontextmanager
    async def answering(self, thread_ids: list[str]):
        """Hold the threads' marks, renewed, for the turn's whole run; released however it ends."""
        if not thread_ids:
            yield
            return
        marked = await self.mark(thread_ids)
        renewing = asyncio.create_task(self._keep_renewed(marked))
        try:
            yield
        finally:
            renewing.cancel()
            await asyncio.to_thread(self.release, marked)

    async def _keep_renewed(self, marked: Marked) -> None:
        while True:
            await asyncio.sleep(self.mark_s / RENEWALS_PER_MARK)
            await asyncio.to_thread(self.renew, marked)


# KEYS: the conversations' marks; ARGV[1] this turn's token, ARGV[2] a mark's lifetime (ms).
# All or none: 1 when every mark was set, 0 (and none set) when one is held.
_MARK = """
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1], 'PX', ARGV[2]) end
return 1
"""

# KEYS: the marks; ARGV[1] the token, ARGV[2] the lifetime (ms). Only this turn's own marks are
# renewed; returns how many were.
_RENEW = """
local renewed = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    renewed = renewed + 1
  end
end
return renewed
"""

# KEYS: the marks; ARGV[1] the token: only this turn's own marks are removed.
_RELEASE = """
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
return 1
"""


class SharedConversationsAnswering(ConversationsAnswering):
    """Every replica's conversations being answered, marked in Redis.

    ``client`` is a redis-py client, or a function that makes one (called on first use). Keys:
    ``{<index_name>:answering}:<sha256 of the thread>``; the hash tag keeps a batch's marks in one
    Redis Cluster slot, since one script sets them all or none."""

    def __init__(self, client, namespace: str, mark_s: float, wait_s: float):
        super().__init__(mark_s, wait_s)
        self._client = client
        self.namespace = namespace
        self._outage = Outage("conversations being answered")
        self._scripts: dict[str, object] = {}

    def key(self, thread_id: str) -> str:
        return f"{{{self.namespace}:answering}}:{hashed('thread', thread_id)}"

    def _run(self, source: str, keys: list[str], args: list) -> int:
        if source not in self._scripts:
            self._scripts[source] = client_of(self).register_script(source)
        return int(self._scripts[source](keys=keys, args=args))

    def try_mark(self, thread_ids: list[str]) -> Marked | None:
        token, keys = uuid.uuid4().hex, [self.key(thread) for thread in thread_ids]
        try:
            marked = self._run(_MARK, keys, [token, int(self.mark_s * 1000)])
        except redis_errors() as error:
            self._outage.failed(error)
            return super().try_mark(thread_ids)
        self._outage.answered()
        return Marked(tuple(keys), token) if marked else None

    def renew(self, marked: Marked) -> None:
        if marked.token is None:
            return
        try:
            renewed = self._run(_RENEW, list(marked.keys), [marked.token, int(self.mark_s * 1000)])
        except redis_errors() as error:  # the marks lapse; a question meanwhile may run beside this one
            self._outage.failed(error)
            return
        if renewed < len(marked.keys):
            log.warning("a conversation's answering mark was lost (Redis restarted or evicted it); "
                        "another question to it may now run beside this one")

    def release(self, marked: Marked) -> None:
        if marked.token is None:  # marked in this process during an outage
            return super().release(marked)
        try:
            self._run(_RELEASE, list(marked.keys), [marked.token])
        except redis_errors() as error:  # the marks lapse after mark_s
            self._outage.failed(error)


def conversations_answering(cfg, shared: bool, client=None) -> ConversationsAnswering:
    """The deployment's marks: in its Redis (``client``, default the configured one, reached on first
    use) when ``shared``, otherwise in this process."""
    if not shared:
        return ConversationsAnswering(cfg.answering_mark_s, cfg.answering_wait_s)
    if client is None:
        from keel.stores.connections import get_redis

        client = lambda: get_redis(cfg)  # noqa: E731 - made on first use: starting the app reaches no server
    return SharedConversationsAnswering(client, cfg.index_name, cfg.answering_mark_s, cfg.answering_wait_s)
