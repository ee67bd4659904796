"""The per-user rate and the wrong-key bound, kept in Redis so that every replica of ``keel serve``
counts against the same numbers.

Kept in one process, each replica would give a user its own bucket: behind a round-robin balancer
with N replicas a caller could send N times their rate, and guess N times as many keys, simply by
being spread over them. Here the bucket and the failures live in the deployment's Redis (the one
the documents and the follow-up cache already use), each update one Lua script, so two replicas
taking the same user's last token at the same moment cannot both get it. The clock is Redis's own
(``TIME``), so replicas whose clocks disagree still refill one bucket at one rate.

Keys: ``<index_name>:ratelimit:<sha256>`` per user, and for wrong keys one hash of recent failure
times per counted address plus an index of addresses by last failure
(``{<index_name>:authfail}:...``: the hash tag keeps both in one Redis Cluster slot, since one
script updates both). A user name or an address is hashed into the key, so no caller can name or
forge another's entry. Every key expires once it has nothing left to say (a full bucket, failures
out of the window), and at most ``auth_failure_tracked_addresses`` addresses are remembered, the one
that failed least recently forgotten first: many addresses cannot fill Redis.

When Redis cannot be reached the same limits are kept in the process instead (the in-process
classes these extend), and a warning is logged once per outage: the server keeps serving and each
replica still bounds a caller, only not together.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading

from keel.server.limits import FailedAttempts, RateLimiter
from keel.stores.connections import get_redis

log = logging.getLogger("keel.server")

# Redis's clock in milliseconds (TIME is allowed in scripts: Redis replicates a script's effects).
_NOW_MS = "local clock = redis.call('TIME')\nlocal now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)\n"

# KEYS[1] the user's bucket; ARGV: tokens per ms, burst. Returns the wait in ms (0: go ahead).
_TAKE_TOKEN = _NOW_MS + """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
if now > at then tokens = math.min(burst, tokens + (now - at) * rate) end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.max(1, math.ceil((1 - tokens) / rate)) end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', string.format('%d', math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return wait
"""

# KEYS[1] the failure times per address; ARGV: address field, limit, window ms.
# Returns the ms until the address may present a key again (0: now).
_RETRY_AFTER = _NOW_MS + """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local limit, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local live = {}
for t in string.gmatch(raw, '%d+') do
  t = tonumber(t)
  if now - t < window then table.insert(live, t) end
end
if #live < limit then return 0 end
return math.max(live[1] + window - now, 1)
"""

# KEYS[1] the failure times per address, KEYS[2] the addresses by last failure;
# ARGV: address field, limit, window ms, addresses tracked. Returns 1 when this failure locks the address out.
_FAIL = _NOW_MS + """
local field, limit, window, tracked = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local live = {}
for t in string.gmatch(redis.call('HGET', KEYS[1], field) or '', '%d+') do
  t = tonumber(t)
  if now - t < window then table.insert(live, t) end
end
table.insert(live, now)
while #live > limit do table.remove(live, 1) end
local times = {}
for i, t in ipairs(live) do times[i] = string.format('%d', t) end
redis.call('HSET', KEYS[1], field, table.concat(times, ','))
redis.call('ZADD', KEYS[2], now, field)
local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - window, 'LIMIT', 0, 128)
for _, old in ipairs(stale) do
  redis.call('HDEL', KEYS[1], old)
  redis.call('ZREM', KEYS[2], old)
end
local extra = redis.call('ZCARD', KEYS[2]) - tracked
if extra > 0 then
  local gone = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[1], gone[i]) end
end
redis.call('PEXPIRE', KEYS[1], window)
redis.call('PEXPIRE', KEYS[2], window)
if #live == limit then return 1 end
return 0
"""


def hashed(kind: str, name: str) -> str:
    """A key part no caller can steer: the SHA-256 of the kind and the name together."""
    return hashlib.sha256(json.dumps([kind, name]).encode("utf-8")).hexdigest()


class Outage:
    """Logs the first Redis failure of an outage and the return; the limits fall back meanwhile."""

    def __init__(self, what: str):
        self.what = what
        self.down = False
        self._lock = threading.Lock()

    def failed(self, error: Exception) -> None:
        with self._lock:
            first, self.down = not self.down, True
        if first:
            log.warning("%s: Redis unavailable (%s); counting in this process until it is back", self.what,
                        type(error).__name__)

    def answered(self) -> None:
        if self.down:
            with self._lock:
                self.down = False
            log.warning("%s: Redis is back; counting across replicas again", self.what)


def redis_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean Redis could not be reached: what is shared through it does without it."""
    from redis.exceptions import RedisError

    return (RedisError, ConnectionError, TimeoutError, OSError)


class SharedRateLimiter(RateLimiter):
    """``RateLimiter``'s token bucket per user, one bucket for all replicas (in Redis).

    ``client`` is a redis-py client, or a function that makes one (called on first use, so an app
    starts without reaching Redis)."""

    def __init__(self, client, namespace: str, per_minute: float, burst: int):
        super().__init__(per_minute, burst)
        self._client = client
        self.namespace = namespace
        self._outage = Outage("rate limit")
        self._script = None

    def key(self, user: str) -> str:
        return f"{self.namespace}:ratelimit:{hashed('rate', user)}"

    def take(self, user: str) -> float:
        try:
            if self._script is None:
                self._script = client_of(self).register_script(_TAKE_TOKEN)
            wait_ms = self._script(keys=[self.key(user)], args=[repr(self.rate_per_s / 1000.0), repr(self.burst)])
        except redis_errors() as error:
            self._outage.failed(error)
            return super().take(user)
        self._outage.answered()
        return int(wait_ms) / 1000.0


class SharedFailedAttempts(FailedAttempts):
    """``FailedAttempts``'s sliding window of wrong keys per client address, shared by all replicas
    (in Redis); the same limit, window, address counting and bound on tracked addresses."""

    def __init__(self, client, namespace: str, limit: int, window_s: float, tracked: int, ipv6_prefix: int = 64):
        super().__init__(limit, window_s, tracked, ipv6_prefix)
        self._client = client
        self.namespace = namespace
        self._outage = Outage("wrong-key bound")
        self._scripts: dict[str, object] = {}

    @property
    def times_key(self) -> str:
        return f"{{{self.namespace}:authfail}}:times"

    @property
    def recent_key(self) -> str:
        return f"{{{self.namespace}:authfail}}:recent"

    def _run(self, name: str, source: str, keys: list[str], args: list) -> int:
        if name not in self._scripts:
            self._scripts[name] = client_of(self).register_script(source)
        return int(self._scripts[name](keys=keys, args=args))

    def retry_after(self, address: str) -> float:
        if self.limit <= 0:
            return 0.0
        try:
            wait_ms = self._run("retry_after", _RETRY_AFTER, [self.times_key],
                                [hashed("address", address), self.limit, int(self.window_s * 1000)])
        except redis_errors() as error:
            self._outage.failed(error)
            return super().retry_after(address)
        self._outage.answered()
        return wait_ms / 1000.0

    def fail(self, address: str) -> bool:
        if self.limit <= 0:
            return False
        try:
            locked = self._run("fail", _FAIL, [self.times_key, self.recent_key],
                               [hashed("address", address), self.limit, int(self.window_s * 1000), self.tracked])
        except redis_errors() as error:
            self._outage.failed(error)
            return super().fail(address)
        self._outage.answered()
        return bool(locked)


def client_of(limiter):
    """The limiter's Redis client, made on first use."""
    if callable(limiter._client) and not hasattr(limiter._client, "register_script"):
        limiter._client = limiter._client()
    return limiter._client


def shared_limits(cfg, client=None) -> tuple[SharedRateLimiter, SharedFailedAttempts]:
    """The deployment's per-user rate and wrong-key bound, in ``client`` (default: the configured
    Redis, reached on first use) under the deployment's index name."""
    if client is None:
        client = lambda: get_redis(cfg)  # noqa: E731 - made on first use: starting the app reaches no server
    rate = SharedRateLimiter(client, cfg.index_name, cfg.rate_limit_per_minute, cfg.rate_limit_burst)
    failed = SharedFailedAttempts(client, cfg.index_name, cfg.auth_failure_limit, cfg.auth_failure_window_s,
                                  cfg.auth_failure_tracked_addresses, cfg.auth_failure_ipv6_prefix)
    return rate, failed
