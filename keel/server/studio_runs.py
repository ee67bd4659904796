"""What a LangGraph Studio / ``langgraph dev`` run may carry: checked in Studio auth's
``threads.create_run`` hook (keel/server/studio_auth.py) with the rules ``keel serve`` applies to a chat
body, reusing its checks (keel/server/request_checks.py, keel/server/settings_policy.py).

* Its input is one question (a human message, not empty, at most ``max_question_chars``), or none:
  a run from a checkpoint (Studio's replay and fork) asks nothing new; or, for the ingestion graph
  (``keel_ingest``), documents checked as an ``/ingest`` body (the caller's own user, a bounded
  conversation id) holding ``files`` and the ids alone, so it cannot carry a question past the
  checks above. The graph itself refuses paths and over-size files (nodes/check_uploads.py).
* No command: a command's ``update`` or ``goto`` would write the conversation's state or jump past the
  question's checks, and its ``resume`` would let an asker approve their own answer held for human
  review (nodes/review_answer.py). A reviewer's resume is the one exception, checked on its own
  (keel/server/studio_review.py).
* Its config holds the request settings (``configurable``), ``recursion_limit`` up to
  ``max_request_recursion_limit`` (a run naming none gets that bound), and tags, metadata and a run
  name; nothing else.
* ``checkpoint_id`` / ``checkpoint_ns`` / ``checkpoint_map`` (time travel) are allowed on a run in a
  thread. They are only looked up inside the run's own thread: LangGraph's server sets the run's
  ``thread_id`` itself, after this check, from the thread in the URL, which the owner filter lets
  through only for its owner; a ``thread_id`` in the config naming another thread is refused here
  as well. So another user's checkpoint id finds nothing.
* The keys LangGraph's server writes into a run's configurable itself (ids, its own ``langgraph_``
  and ``__`` keys, the request's ``x-`` headers and user agent, LangSmith tracing) are not the
  caller's settings and are left alone: none of them is a Keel setting.
"""

from __future__ import annotations

import uuid
from typing import Any

from keel.core.configuration import (
    LANGGRAPH_CONFIGURABLE_KEYS,
    LANGGRAPH_CONFIGURABLE_PREFIXES,
    Configuration,
)
from keel.server.request_checks import check_ingest_body, check_question
from keel.server.settings_policy import RequestRefused, check_request_settings

CONFIG_KEYS = frozenset({"configurable", "recursion_limit", "tags", "metadata", "run_name"})
CHECKPOINT_KEYS = ("checkpoint_id", "checkpoint_ns", "checkpoint_map")
# LangGraph's own configurable keys, less those a run's caller could misuse: user_id is checked against
# the credential, the checkpoint keys must name the run's own thread, thread_ts is an old checkpoint name.
SERVER_KEYS = LANGGRAPH_CONFIGURABLE_KEYS - {"user_id", "thread_ts", *CHECKPOINT_KEYS}
SERVER_PREFIXES = tuple(prefix for prefix in LANGGRAPH_CONFIGURABLE_PREFIXES if prefix != "checkpoint_")
UPLOAD_INPUT_KEYS = frozenset({"files", "user_id", "conversation_id"})  # the ingestion graph's input


def check_run(kwargs: dict[str, Any], thread_id: Any, cfg: Configuration, user_id: str) -> None:
    """Check a run's kwargs and write the caller's user id (config and context) and the recursion
    bound into them, in place: LangGraph's server goes on using the very dicts it passed to the
    hook (new ones would never reach the run). A ``RequestRefused`` says why a run is refused."""
    graph_input = kwargs.get("input")
    if isinstance(graph_input, dict) and "files" in graph_input and set(graph_input) <= UPLOAD_INPUT_KEYS:
        check_ingest_body(graph_input, cfg, user_id)
    elif graph_input is not None:
        check_question(graph_input, cfg)
    if kwargs.get("command") is not None:
        raise RequestRefused(400, "a run cannot carry a command: a turn held for review is resumed by a "
                                  "reviewer (a key with the reviewer or admin role)")
    config = run_config(kwargs)
    limit = recursion_limit(config.get("recursion_limit"), cfg)
    _checked_settings(config.get("configurable"), thread_id, cfg, user_id)
    _checked_settings(kwargs.get("context"), thread_id, cfg, user_id)
    config["recursion_limit"] = limit
    if isinstance(config.get("metadata"), dict):
        config["metadata"]["owner"] = user_id
    _with_user(config, "configurable", user_id)
    _with_user(kwargs, "context", user_id)


def _with_user(holder: dict[str, Any], key: str, user_id: str) -> None:
    if isinstance(holder.get(key), dict):
        holder[key]["user_id"] = user_id
    else:
        holder[key] = {"user_id": user_id}


def run_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The run's config (made empty in ``kwargs`` when it has none), holding only what a run may set."""
    config = kwargs.get("config")
    if config is None:
        config = kwargs["config"] = {}
    if not isinstance(config, dict):
        raise RequestRefused(400, "config must be an object")
    extra = sorted(set(config) - CONFIG_KEYS)
    if extra:
        raise RequestRefused(400, f"config key '{extra[0]}' cannot be set by a run; use config.configurable")
    return config


def recursion_limit(value: Any, cfg: Configuration) -> int:
    """A run's recursion limit: the caller's when within the deployment's cap, else refused (400)."""
    cap = cfg.max_request_recursion_limit
    if value is None:
        return cap
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
        raise RequestRefused(400, f"recursion_limit must be an integer between 1 and {cap}")
    return value


def _checked_settings(settings: Any, thread_id: Any, cfg: Configuration, user_id: str) -> None:
    """Refuse ``settings`` (a run's configurable or context) unless every key is known good."""
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise RequestRefused(400, "config.configurable and context must be objects")
    named_thread = settings.get("thread_id")
    if named_thread is not None and thread_id is not None and str(named_thread) != str(thread_id):
        raise RequestRefused(400, "thread_id cannot name another thread than the run's own")
    if any(settings.get(key) is not None for key in CHECKPOINT_KEYS):
        _check_checkpoint(settings, thread_id, cfg)
    requested = {key: value for key, value in settings.items()
                 if key not in SERVER_KEYS and key not in CHECKPOINT_KEYS and not key.startswith(SERVER_PREFIXES)}
    checked = check_request_settings(requested, cfg)
    if checked.get("user_id", user_id) != user_id:
        raise RequestRefused(403, "user_id does not match the credential")


def _check_checkpoint(settings: dict[str, Any], thread_id: Any, cfg: Configuration) -> None:
    if thread_id is None:
        raise RequestRefused(400, "a checkpoint belongs to a thread: start the run in that thread")
    checkpoint_id = settings.get("checkpoint_id")
    if checkpoint_id is not None:
        _checkpoint_id(checkpoint_id)
    namespace = settings.get("checkpoint_ns")
    if namespace is not None:
        _namespace(namespace, cfg)
    mapping = settings.get("checkpoint_map")
    if mapping is not None:
        if not isinstance(mapping, dict) or len(mapping) > cfg.max_request_checkpoint_map:
            raise RequestRefused(400, "checkpoint_map must be an object of at most "
                                      f"{cfg.max_request_checkpoint_map} namespaces")
        for key, value in mapping.items():
            _namespace(key, cfg)
            _checkpoint_id(value)


def _checkpoint_id(value: Any) -> None:
    if isinstance(value, uuid.UUID):
        return
    try:
        uuid.UUID(value if isinstance(value, str) else "")
    except ValueError:
        raise RequestRefused(400, "checkpoint_id must be a checkpoint's id (a UUID)") from None


def _namespace(value: Any, cfg: Configuration) -> None:
    if not isinstance(value, str) or len(value) > cfg.max_request_id_chars or not value.isprintable():
        raise RequestRefused(400, f"checkpoint_ns must be a namespace of at most {cfg.max_request_id_chars} "
                                  "printable characters")
