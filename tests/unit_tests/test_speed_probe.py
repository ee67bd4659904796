"""`keel models verify` measures a model's reading and writing speed from timed calls: one call
stalled by the machine must not make the writing speed absurd (it read 63 million tokens/s once)."""

from __future__ import annotations

import itertools

import httpx

from keel.runtime import model_check


def test_one_stalled_call_does_not_decide_the_measured_speeds(monkeypatch):
    clock = itertools.count()
    now = [0.0]
    # seconds each call takes, in order: warm-up, three short calls (the first stalls), three long ones
    durations = iter([5.0, 3.0, 0.2, 0.2, 1.2, 1.2, 1.3])

    class Reply:
        def __init__(self, tokens: int):
            self.tokens = tokens

        def raise_for_status(self):
            return None

        def json(self):
            return {"usage": {"prompt_tokens": 200, "completion_tokens": self.tokens}}

    def post(url, json, timeout, headers=None):
        next(clock)
        now[0] += next(durations)
        return Reply(json["max_tokens"])

    monkeypatch.setattr(httpx, "post", post)
    monkeypatch.setattr(model_check.time, "perf_counter", lambda: now[0])
    reading, writing, prompt_tokens = model_check.measure_speed("http://127.0.0.1:1", 10.0)
    assert prompt_tokens == 200 and abs(reading - 200 / 0.2) < 1e-6
    # the fastest long call less the fastest short one (a single pair gave 63 / (1.2 - 3.0): nothing sane)
    assert abs(writing - (model_check.SPEED_PROBE_TOKENS - 1) / 1.0) < 1e-6
    assert reading > writing > 0
