"""The tokenizer proxy's limits: how many tokens the chat model's server really takes.

``llm_context_window`` is what the deployment means to use; the server may take less: a GGUF trained
for a shorter context, a TGI started with a smaller ``--max-total-tokens``, a vLLM with a smaller
``--max-model-len``. Each server says so on its model info route, once per process (cached per
URL): TGI ``GET /info`` (max_input_tokens / max_total_tokens / max_batch_total_tokens), vLLM
``GET /v1/models`` (max_model_len), llama.cpp's own server ``GET /props`` (n_ctx). The embedded
server's window is the n_ctx Keel starts it with, at most what its GGUF states. The token budget
and context fitting use the smaller of the setting and these (``fitted_to_model``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from functools import lru_cache

from keel.core.settings.runtime import RuntimeSettings
from keel.models.chat import resolve_runtime
from keel.runtime.client_options import bearer_headers
from keel.runtime.model_pool import chat_gguf, served_window
from keel.runtime.servers import configured_llm_api_key, configured_llm_endpoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelLimits:
    """What the server takes per request; None = it does not say."""

    context_window: int | None = None  # prompt + answer tokens
    max_input_tokens: int | None = None  # prompt tokens
    max_batch_tokens: int | None = None  # tokens of all requests it batches together
    source: str = "unknown"


def _positive(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def limits_from_info(route: str, body) -> ModelLimits | None:
    """The limits in one model info route's JSON body, or None when it states none."""
    if not isinstance(body, dict):
        return None
    if route == "/info":  # TGI: v2 names, then v1's max_input_length
        limits = ModelLimits(_positive(body.get("max_total_tokens")),
                             _positive(body.get("max_input_tokens") or body.get("max_input_length")),
                             _positive(body.get("max_batch_total_tokens")), "tgi /info")
    elif route == "/v1/models":  # vLLM: the first served model's max_model_len
        models = body.get("data") or [{}]
        first = models[0] if isinstance(models[0], dict) else {}
        limits = ModelLimits(_positive(first.get("max_model_len")), source="vllm /v1/models")
    else:  # llama.cpp's server: the slots' n_ctx
        settings = body.get("default_generation_settings") or {}
        limits = ModelLimits(_positive(settings.get("n_ctx") or body.get("n_ctx")), source="llama.cpp /props")
    return limits if limits.context_window or limits.max_input_tokens else None


INFO_ROUTES = ("/info", "/v1/models", "/props")
RETRY_AFTER_S = 60.0  # an endpoint whose info routes did not answer is asked again after this long
_failed: dict[str, float] = {}


@lru_cache(maxsize=16)
def endpoint_limits(url: str, timeout_s: float, api_key: str | None = None) -> ModelLimits:
    """The limits the endpoint at ``url`` states on the first of its info routes that has any (cached;
    an endpoint that answers none of them is asked again next time)."""
    import httpx

    failed_at = _failed.get(url)
    if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_S:
        raise ConnectionError(f"the chat endpoint {url} did not answer its model info routes a moment ago")
    headers = bearer_headers(api_key) if api_key else None
    answered = False
    for route in INFO_ROUTES:
        try:
            response = httpx.get(url.rstrip("/") + route, timeout=timeout_s, headers=headers)
        except httpx.HTTPError:
            continue
        # 200: the route's body; 404: the server has no such route. Anything else (401, a 503 while
        # TGI loads) says nothing about the model, so it is not remembered as "no limits".
        answered = answered or response.status_code in (200, 404)
        try:
            found = limits_from_info(route, response.json()) if response.status_code == 200 else None
        except ValueError:
            found = None
        if found is not None:
            return found
    if not answered:  # raised, so not cached; asked again after RETRY_AFTER_S, not on every step of a turn
        _failed[url] = time.monotonic()
        raise ConnectionError(f"the chat endpoint {url} did not answer its model info routes")
    log.info("the chat endpoint %s states no context length; llm_context_window is used as it is", url)
    return ModelLimits()


def model_limits(cfg: RuntimeSettings) -> ModelLimits:
    """The configured chat model's limits: its endpoint's, or the embedded server's (n_ctx and the GGUF)."""
    url = configured_llm_endpoint(cfg)
    if url is not None:
        return endpoint_limits(url, cfg.connect_timeout_s, configured_llm_api_key(cfg))
    window = served_window(cfg, chat_gguf(cfg))
    return ModelLimits(window, source="gguf" if resolve_runtime(cfg) == "transformers" else "embedded n_ctx")


def fitted_to_model(cfg):
    """``cfg`` with ``llm_context_window`` no larger than the model takes: its window, and its prompt
    limit plus the answer's ``max_new_tokens``."""
    try:
        limits = model_limits(cfg)
    except Exception as error:  # noqa: BLE001 - no limits known: the settings stand, the model errs if too long
        log.debug("no model limits (%s); the settings stand", error)
        return cfg
    taken = [cfg.llm_context_window, limits.context_window,
             limits.max_input_tokens + cfg.max_new_tokens if limits.max_input_tokens else None]
    window = min(value for value in taken if value)
    if window >= cfg.llm_context_window:
        return cfg
    try:
        return dataclasses.replace(cfg, llm_context_window=window)
    except ValueError as error:  # e.g. max_new_tokens no longer below it: the model's server will say so
        log.warning("the chat model takes %d tokens, too few for these settings (%s)", window, error)
        return cfg
