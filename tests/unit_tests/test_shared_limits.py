"""When Redis cannot be reached, the shared limits keep counting in the process (each replica still
bounds a caller) and say so once per outage; nothing reaches Redis before the first request."""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from keel.core.configuration import Configuration
from keel.core.settings.checks import ConfigurationError
from keel.server.answering import conversations_answering
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


def test_conversations_being_answered_fall_back_to_the_process_while_redis_is_down():
    from keel.server.answering import SharedConversationsAnswering

    answering = SharedConversationsAnswering(DownRedis(), "keel", mark_s=5, wait_s=10)
    marked = answering.try_mark(["alice/c1"])
    assert marked is not None and marked.token is None  # marked in this process
    assert answering.try_mark(["alice/c1", "alice/c2"]) is None
    assert answering.try_mark(["alice/c2"]) is not None  # all or none: the refused batch marked nothing
    answering.renew(marked)  # nothing to renew in the process, and no error
    answering.release(marked)
    assert answering.try_mark(["alice/c1"]) is not None


def test_making_the_limits_reaches_no_server():
    made = []
    rate, failed = shared_limits(Configuration(), client=lambda: made.append(1) or DownRedis())
    assert made == []
    rate.take("alice")
    assert made == [1]
    answering = conversations_answering(Configuration(), shared=True,
                                        client=lambda: made.append(2) or DownRedis())
    assert made == [1]
    assert answering.try_mark(["alice/c1"]) is not None and made == [1, 2]


def test_a_mark_that_outlives_the_wait_is_refused_as_a_setting():
    with pytest.raises(ConfigurationError, match="answering_mark_s"):
        Configuration(answering_mark_s=20, answering_wait_s=10)
