"""Limits that keep one caller from taking the server from everyone else: a per-user request rate
(token bucket) and a bounded number of generations at once, with a bounded queue in front.

Both work across event loops and threads (uvicorn runs one loop; test clients may run several).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque


class Busy(Exception):
    """Every slot and the queue are taken (or the wait ran out): try again after ``retry_after_s``."""

    status = 503

    def __init__(self, retry_after_s: float, message: str):
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.message = message


class RateLimited(Busy):
    """This user sent more than their rate allows."""

    status = 429


class RateLimiter:
    """A token bucket per user: ``burst`` requests at once, refilled at ``per_minute``."""

    def __init__(self, per_minute: float, burst: int):
        self.rate_per_s = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, user: str) -> float:
        """0 when the request may go ahead; otherwise the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, updated = self._buckets.get(user, (self.burst, now))
            tokens = min(self.burst, tokens + (now - updated) * self.rate_per_s)
            if tokens >= 1.0:
                self._buckets[user] = (tokens - 1.0, now)
                return 0.0
            self._buckets[user] = (tokens, now)
            return (1.0 - tokens) / self.rate_per_s if self.rate_per_s > 0 else float("inf")


class WorkSlots:
    """At most ``capacity`` holders at once; up to ``queue_limit`` more wait in order, each at most
    ``wait_timeout_s``; anyone beyond is refused at once with ``Busy``."""

    def __init__(self, capacity: int, queue_limit: int, wait_timeout_s: float, retry_after_s: float):
        self.capacity = capacity
        self.queue_limit = queue_limit
        self.wait_timeout_s = wait_timeout_s
        self.retry_after_s = retry_after_s
        self.active = 0
        self._waiters: deque[asyncio.Future] = deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self) -> None:
        with self._lock:
            if self.active < self.capacity and not self._waiters:
                self.active += 1
                return
            if len(self._waiters) >= self.queue_limit:
                raise Busy(self.retry_after_s, "the server is busy; try again later")
            granted = asyncio.get_running_loop().create_future()
            self._waiters.append(granted)
        try:
            await asyncio.wait_for(asyncio.shield(granted), self.wait_timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError) as stop:
            with self._lock:
                still_queued = granted in self._waiters
                if still_queued:
                    self._waiters.remove(granted)
            if not still_queued:  # the slot was handed over as we gave up: pass it on
                if granted.done() and not granted.cancelled():
                    self.release()
                else:
                    granted.cancel()  # _grant sees the cancellation and passes the slot on
            if isinstance(stop, asyncio.CancelledError):
                raise
            raise Busy(self.retry_after_s, "the server is busy; try again later") from None

    def release(self) -> None:
        with self._lock:
            if not self._waiters:
                self.active -= 1
                return
            granted = self._waiters.popleft()  # the slot passes straight to the next in line
        granted.get_loop().call_soon_threadsafe(self._grant, granted)

    def _grant(self, granted: asyncio.Future) -> None:
        if granted.cancelled():
            self.release()
        else:
            granted.set_result(True)
