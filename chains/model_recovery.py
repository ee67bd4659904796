"""A chat model that fails mid-answer gets one more chance before the user sees an error.

A model server can die or restart under a running answer (out of memory, an operator's restart).
Asking the components for the chat model again restarts Keel's embedded llama.cpp server if its
process is gone (keel/runtime/servers.py keeps it running) and re-checks a configured endpoint; the
attempt is then run once more (``model_failure_retries``). If it fails again the caller gets a
``ModelUnavailableError`` whose ``reason`` names the endpoint, and the exception's text goes to
the log only: the user's answer never shows internals.

A request that is over (its client left, its time ran out) is not an outage: its
``GenerationCancelled`` is never retried nor turned into a ``model_unavailable`` answer; it ends the
run (keel/models/cancellation.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from langchain_core.language_models import BaseChatModel

from keel.components import Components
from keel.core.configuration import Configuration
from keel.models.cancellation import GenerationCancelled, check_cancelled, is_cancelled
from keel.models.chat import resolve_runtime
from keel.models.endpoint_errors import endpoint_error
from keel.runtime.servers import (
    configured_llm_endpoint,
    keel_home,
    llm_server_name,
    normalize_endpoint,
    redact,
)

log = logging.getLogger("keel.answer")
MODEL_UNAVAILABLE = "model_unavailable"  # reason code: "model_unavailable:<endpoint>"
MODEL_REFUSED = "model_refused"  # reason code: "model_refused:<endpoint>", the server refused the request itself
Result = TypeVar("Result")


class ModelUnavailableError(RuntimeError):
    """The chat model failed on every try; ``endpoint`` says which, ``reason`` is the reason code."""

    def __init__(self, endpoint: str):
        super().__init__(f"the language model at {endpoint} did not answer")
        self.endpoint = endpoint
        self.reason = f"{MODEL_UNAVAILABLE}:{endpoint}"


class ModelRefusedError(ModelUnavailableError):
    """The chat server refused the request itself (too long for its window, a parameter it does not
    take): not retried; ``message`` is the server's own words, for the log."""

    def __init__(self, endpoint: str, message: str):
        super().__init__(endpoint)
        self.message = message
        self.reason = f"{MODEL_REFUSED}:{endpoint}"


def run_with_model_recovery(
    components: Components,
    cfg: Configuration,
    run: Callable[[BaseChatModel], Result],
    on_retry: Callable[[str], None] = lambda endpoint: None,
) -> Result:
    """``run(model)``; on any failure get the model again (restarting a dead embedded server) and
    re-run, at most ``cfg.model_failure_retries`` times; ``on_retry`` is told before each re-run."""
    retries = max(0, int(cfg.model_failure_retries))
    model: BaseChatModel | None = None
    for attempt in range(retries + 1):
        try:
            check_cancelled()
            model = components.chat(cfg)
            return run(model)
        except GenerationCancelled:
            raise
        except Exception as error:  # noqa: BLE001 - any failure of the model or its server
            if is_cancelled():  # the failure is the request's end (its stream closed): nothing to recover
                raise GenerationCancelled("the request was cancelled") from error
            endpoint = model_endpoint(model, components, cfg)
            said = endpoint_error(error)
            if said is not None and said.refused:  # the same request would be refused again: no retry
                log.error("the chat model at %s refused the request (HTTP %s %s: %s)", endpoint, said.status,
                          said.kind or "-", said.message)
                raise ModelRefusedError(endpoint, said.message) from error
            last = attempt == retries
            # a retry is degraded service; the last failure leaves the user without an answer: an operator's matter
            log.log(logging.ERROR if last else logging.WARNING, "the chat model at %s failed (%s: %s); %s",
                    endpoint, type(error).__name__, str(error)[:300],
                    "giving up" if last else "restarting it if needed and retrying")
            log.debug("chat model failure", exc_info=True)
            if last:
                raise ModelUnavailableError(endpoint) from error
            on_retry(endpoint)
    raise AssertionError("unreachable")  # pragma: no cover


def model_endpoint(model: BaseChatModel | None, components: Components, cfg: Configuration) -> str:
    """Where the chat model runs, fit for a message: its URL (no password), or what it is."""
    url = getattr(getattr(model, "llm", None), "endpoint_url", None)
    if url:
        return redact(normalize_endpoint(str(url)))
    if components.chat_model is not None:
        return type(components.chat_model).__name__
    configured = configured_llm_endpoint(cfg)
    if configured:
        return redact(configured)
    if resolve_runtime(cfg) == "transformers":
        return "in-process transformers model"
    return f"embedded llama.cpp server (log: {keel_home(cfg) / 'logs' / (llm_server_name(cfg) + '.log')})"
