"""``keel models verify``: is each installed pool model the pinned file, does it load, how fast is it.

The file is hashed against its pin; the GGUF's own metadata gives the context length it was trained
for (checked against the pool's entry); then the model answers a fixed prompt through its endpoint
(the embedded llama.cpp server, started if needed, or the deployment's), once with one token and
once with ``SPEED_PROBE_TOKENS``, so prompt reading and writing speed are told apart. The speeds
are kept in the pool folder's measured.json for ``keel models list``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.client_options import bearer_headers
from keel.runtime.model_install import Progress, file_sha256
from keel.runtime.model_pool import (
    MEASURED_FILE,
    PoolModel,
    gguf_context_length,
    installed_path,
    pool_folder,
)
from keel.runtime.paths import ModelFilesMissingError
from keel.runtime.servers import ServerUnavailableError, configured_llm_api_key, llm_endpoint

SPEED_PROBE_TOKENS = 64  # tokens written by the speed probe's long call
SPEED_PROBE_PROMPT = (
    "Read the passage and answer the question in one sentence.\n\nPassage: "
    + " ".join(f"Model ZR-{n}00 lifts {n * 5} kg, runs {n + 3} hours per charge and costs {n * 9_000:,} euros."
               for n in range(1, 31))
    + "\n\nList every model with its load, runtime and price, one model per line."
)


@dataclass(frozen=True)
class Verdict:
    """What ``verify`` found for one model; ``problems`` empty = usable."""

    name: str
    path: str
    sha256_ok: bool
    context_window: int | None
    prompt_tokens_per_s: float | None = None
    tokens_per_s: float | None = None
    problems: tuple[str, ...] = ()


PROBE_ROUNDS = 3


def measure_speed(url: str, timeout_s: float, headers: dict | None = None) -> tuple[float, float, int]:
    """(prompt tokens/s, written tokens/s, prompt tokens) of the endpoint at ``url`` on the fixed probe."""
    import httpx  # here, not at the top: `keel` commands start without it

    def call(max_tokens: int, nonce: int) -> tuple[float, dict]:
        # each call's prompt starts differently, so a server's prompt cache cannot skip the reading
        prompt = f"Request {nonce}. {SPEED_PROBE_PROMPT}"
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": 0.0, "seed": 0}
        started = time.perf_counter()
        response = httpx.post(url.rstrip("/") + "/v1/chat/completions", json=body, timeout=timeout_s, headers=headers)
        response.raise_for_status()
        return time.perf_counter() - started, response.json().get("usage") or {}

    call(1, 0)  # the first request after a start pays for loading the weights
    # Each kind of call is made PROBE_ROUNDS times and its fastest kept: one call stalled by the machine
    # (another process, a page fault) made the writing speed the difference of two noisy timings.
    short_s, usage = min((call(1, n) for n in range(1, PROBE_ROUNDS + 1)), key=lambda timed: timed[0])
    long_s, long_usage = min((call(SPEED_PROBE_TOKENS, n) for n in range(PROBE_ROUNDS + 1, 2 * PROBE_ROUNDS + 1)),
                             key=lambda timed: timed[0])
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    written = max(1, int(long_usage.get("completion_tokens") or SPEED_PROBE_TOKENS) - 1)
    # the long call's extra time is its writing; should the short one still have been the slower, the
    # long call's whole time bounds the writing speed from below
    writing_s = long_s - short_s if long_s > short_s else long_s
    return prompt_tokens / short_s, written / writing_s, prompt_tokens


def verify(model: PoolModel, cfg: RuntimeSettings, *, speed: bool = True, progress: Progress | None = None) -> Verdict:
    """Whether a pool model is installed whole and answers, with its speed when ``speed``."""
    import httpx  # for its error class; imported here as in measure_speed

    try:
        path = installed_path(model, cfg)
    except ModelFilesMissingError as error:
        return Verdict(model.name, "-", False, None, problems=(str(error),))
    if not path.is_file():
        return Verdict(model.name, str(path), False, None, problems=(f"not installed: keel models install {model.name}",))
    problems = []
    sha_ok = path.stat().st_size == model.size and file_sha256(path, progress) == model.sha256
    if not sha_ok:
        problems.append(f"{path} is not the pinned file (sha256 {model.sha256[:12]}..): reinstall it")
    try:
        context = gguf_context_length(path)
    except Exception as error:  # noqa: BLE001 - gguf's reader raises several kinds on a file that is not one
        context = None
        problems.append(f"{path} is not a readable GGUF ({type(error).__name__}: {str(error)[:120]})")
    if context is not None and context != model.context_window:
        problems.append(f"the GGUF states a context of {context} tokens, the pool {model.context_window}")
    verdict = Verdict(model.name, str(path), sha_ok, context, problems=tuple(problems))
    if not speed or problems or (cfg.llm_endpoint and not cfg.model_endpoints.get(model.name)):
        return verdict  # llm_endpoint serves the deployment's own model: its speed is not this file's
    try:
        served = dataclasses.replace(cfg, chat_model=model.name, chat_model_gguf=None)
        url = llm_endpoint(served)
        key = configured_llm_api_key(served)
        headers = bearer_headers(key) if key else None
        prompt_speed, write_speed, _ = measure_speed(url, cfg.request_timeout_s, headers)
    except (ServerUnavailableError, httpx.HTTPError, OSError, ValueError) as error:
        return dataclasses.replace(verdict, problems=(f"the model did not answer: {error}",))
    record_speed(cfg, model.name, prompt_speed, write_speed)
    return dataclasses.replace(verdict, prompt_tokens_per_s=round(prompt_speed, 1), tokens_per_s=round(write_speed, 1))


def measured_speeds(cfg: RuntimeSettings | None = None) -> dict[str, dict]:
    """name -> {"prompt_tokens_per_s", "tokens_per_s", "measured_at"} as ``verify`` last recorded them."""
    path = pool_folder(cfg) / MEASURED_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def record_speed(cfg: RuntimeSettings, name: str, prompt_speed: float, write_speed: float) -> None:
    """Keep a pool model's measured speeds, which `keel models` shows."""
    folder = pool_folder(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    speeds = measured_speeds(cfg)
    speeds[name] = {"prompt_tokens_per_s": round(prompt_speed, 1), "tokens_per_s": round(write_speed, 1),
                    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    partial = folder / (MEASURED_FILE + ".partial")
    partial.write_text(json.dumps(speeds, indent=2))
    partial.replace(folder / MEASURED_FILE)
