"""When Redis cannot be reached, the shared limits keep counting in the process (each replica still
bounds a caller) and say so once per outage; nothing reaches Redis before the first request."""

from __future__ import annotations

import logging

from redis.exceptions import ConnectionError as RedisConnectionError

from keel.core.configuration import Configuration
from keel.server.shared_limits import SharedFailedAttempts, SharedRateLimiter, shared_limits


class DownRedis:
    def __init__(self):
        self.calls = 0

    def register_script(self, source):
        def run(keys, args):
            self.calls += 1
            raise RedisConnectionError("Connection refused")

        return run


def test_rate_falls_back_to_the_process_while_redis_is_down(caplog):
    redis = DownRedis()
    limiter = SharedRateLimiter(redis, "keel", per_minute=60, burst=2)
    with caplog.at_level(logging.WARNING, logger="keel.server"):
        waits = [limiter.take("alice") for _ in range(3)]
    assert waits[:2] == [0.0, 0.0] and 0.9 <= waits[2] <= 1.0  # the same bucket, counted here
    assert redis.calls == 3
    assert sum("Redis unavailable" in r.getMessage() for r in caplog.records) == 1  # once per outage


def test_wrong_keys_fall_back_to_the_process_while_redis_is_down():
    failed = SharedFailedAttempts(DownRedis(), "keel", limit=2, window_s=60, tracked=10)
    assert [failed.fail("192.0.2.1"), failed.fail("192.0.2.1")] == [False, True]
    assert failed.retry_after("192.0.2.1") > 0 and failed.retry_after("192.0.2.2") == 0.0


def test_making_the_limits_reaches_no_server():
    made = []
    rate, failed = shared_limits(Configuration(), client=lambda: made.append(1) or DownRedis())
    assert made == []
    rate.take("alice")
    assert made == [1]
