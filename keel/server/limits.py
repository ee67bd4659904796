"""Limits that keep one caller from taking the server from everyone else: a per-user request rate
(token bucket), a bounded number of generations at once with a bounded queue in front, and a
bound on wrong API keys per client address (guessing keys costs a database read each).

Both work across event loops and threads (uvicorn runs one loop; test clients may run several).

These classes count in one process. ``keel serve`` keeps the per-user rate and the wrong-key bound
in Redis instead (keel/server/shared_limits.py extends them), so that replicas share one count, and
falls back to these while Redis is away. ``WorkSlots`` stay per process by design: they bound the
work one replica's process takes on (its CPU, its model calls), which is that replica's alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable


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
        except (TimeoutError, asyncio.CancelledError) as stop:
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


class FailedAttempts:
    """Wrong credentials per client address, in a sliding window: after ``limit`` failures within
    ``window_s`` seconds the address is refused, without its key being checked, until the oldest of
    them leaves the window. So guessing runs at ``limit`` keys per window at most, and a locked-out
    address costs no database read. At most ``tracked`` addresses are remembered (the one that failed
    least recently is forgotten first), so many addresses cannot fill the server's memory. IPv6
    clients count per network of ``ipv6_prefix`` bits: one host usually holds a whole /64.
    ``limit`` 0 turns the bound off."""

    def __init__(self, limit: int, window_s: float, tracked: int, ipv6_prefix: int = 64,
                 clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window_s = window_s
        self.tracked = tracked
        self.ipv6_prefix = ipv6_prefix
        self.clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg) -> FailedAttempts:
        return cls(cfg.auth_failure_limit, cfg.auth_failure_window_s, cfg.auth_failure_tracked_addresses,
                   cfg.auth_failure_ipv6_prefix)

    def address_of(self, client) -> str:
        """The counted address of an ASGI ``scope["client"]`` (host, port), or of a bare host."""
        host = client[0] if isinstance(client, (tuple, list)) and client else client
        if not host:
            return "unknown"
        try:
            address = ipaddress.ip_address(str(host).strip("[]"))
        except ValueError:  # a name (a test client, a Unix socket): counted as it is
            return str(host)
        if isinstance(address, ipaddress.IPv6Address):
            if address.ipv4_mapped is not None:  # an IPv4 client seen through an IPv6 socket
                return str(address.ipv4_mapped)
            return str(ipaddress.ip_network(f"{address}/{self.ipv6_prefix}", strict=False))
        return str(address)

    def retry_after(self, address: str) -> float:
        """0 when the address may present a credential; otherwise the seconds until it may."""
        if self.limit <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            times = self._failures.get(address)
            if times is None:
                return 0.0
            self._expire(times, now)
            if not times:
                del self._failures[address]
            if len(times) < self.limit:
                return 0.0
            return max(times[0] + self.window_s - now, 0.001)

    def fail(self, address: str) -> bool:
        """Count a wrong credential; True when it is the one that locks the address out."""
        if self.limit <= 0:
            return False
        now = self.clock()
        with self._lock:
            times = self._failures.pop(address, None) or deque()
            self._expire(times, now)
            times.append(now)
            while len(times) > self.limit:  # only the newest ``limit`` decide when it may try again
                times.popleft()
            self._failures[address] = times  # now the most recently failing address
            while len(self._failures) > self.tracked:
                self._failures.popitem(last=False)
            return len(times) == self.limit

    def _expire(self, times: deque[float], now: float) -> None:
        while times and now - times[0] >= self.window_s:
            times.popleft()


class KnownKeys:
    """Digests of the API keys that signed in recently, so an address locked out for wrong keys
    (``FailedAttempts``) does not lock out its own users: behind one NAT or proxy, one person's
    guessing must not deny everyone else. A key seen valid within ``max_age_s`` is still checked
    from a locked address; any other key is refused unchecked, as before, so guessing stays bounded.
    Only digests are kept, at most ``tracked`` (the least recently seen forgotten first)."""

    def __init__(self, max_age_s: float = 86_400.0, tracked: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        self.max_age_s, self.tracked, self.clock = max_age_s, tracked, clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def remember(self, key: str) -> None:
        with self._lock:
            self._seen[self.digest(key)] = self.clock()
            self._seen.move_to_end(self.digest(key))
            while len(self._seen) > self.tracked:
                self._seen.popitem(last=False)

    def known(self, key: str) -> bool:
        with self._lock:
            seen = self._seen.get(self.digest(key))
            return seen is not None and self.clock() - seen <= self.max_age_s
