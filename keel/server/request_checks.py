"""The body of a chat or upload request, checked and rewritten before the app sees it.

A caller sends one question (a human message, not empty, not too long), the settings the
allowlist permits (keel/server/settings_policy.py), and ids that are theirs: the user id is always the
credential's, a missing conversation id becomes a new one. Forged history (AI or system messages)
and graph state other than the message are refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from keel.chains.image_inputs import ImageInputError, question_images
from keel.core.configuration import Configuration
from keel.server.settings_policy import RequestRefused, check_request_settings

CHAT_ROUTES = frozenset({"/chat/invoke", "/chat/batch", "/chat/stream", "/chat/stream_log", "/chat/stream_events",
                         "/chat/events"})
INGEST_ROUTE = "/ingest"
HUMAN_TYPES = ("human", "user")


@dataclass
class CheckedBody:
    """The rewritten body and the conversations it uses (the caller's own ids, to be claimed)."""

    body: dict[str, Any]
    thread_ids: list[str] = field(default_factory=list)

    def kept_under(self, threads: dict[str, str]) -> dict[str, Any]:
        """The body with each of the caller's conversation ids replaced by the thread it is kept
        under (keel/server/ownership.py): a run's thread_id, an upload's conversation_id."""
        body = dict(self.body)
        if "config" not in body:  # an upload
            if body.get("conversation_id") in threads:
                body["conversation_id"] = threads[body["conversation_id"]]
            return body
        configs = body["config"] if isinstance(body["config"], list) else [body["config"]]
        kept = [{**config, "configurable": {**config["configurable"],
                                            "thread_id": threads[config["configurable"]["thread_id"]]}}
                for config in configs]
        body["config"] = kept if isinstance(body["config"], list) else kept[0]
        return body


def question_text(message: Any) -> tuple[str, str]:
    """(type, text) of one message as LangChain accepts it: a dict, a (role, text) pair or a string."""
    if isinstance(message, str):
        return "human", message
    if isinstance(message, (list, tuple)) and len(message) == 2:
        return str(message[0]), message[1] if isinstance(message[1], str) else ""
    if isinstance(message, dict):
        kind = str(message.get("type") or message.get("role") or "")
        content = message.get("content")
        if isinstance(content, list):  # content parts: only text counts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return kind, content if isinstance(content, str) else ""
    raise RequestRefused(400, "each message must be an object with type and content")


def check_question(graph_input: Any, cfg: Configuration) -> str:
    """The one question a request asks; 400 for an empty, too long or forged input."""
    if not isinstance(graph_input, dict):
        raise RequestRefused(400, "input must be an object with 'messages'")
    extra = sorted(set(graph_input) - {"messages"})
    if extra:
        raise RequestRefused(400, f"input field '{extra[0]}' cannot be set by a request; send 'messages' only")
    messages = graph_input.get("messages")
    if not isinstance(messages, list) or len(messages) != 1:
        raise RequestRefused(400, "input.messages must hold exactly one message: the question; earlier turns "
                                  "come from the conversation (thread_id)")
    kind, text = question_text(messages[0])
    if kind not in HUMAN_TYPES:
        raise RequestRefused(400, f"the message must be a human message, not '{kind}'")
    content = messages[0].get("content") if isinstance(messages[0], dict) else None
    try:  # pictures: inline, within the deployment's limits (never a link the server would fetch)
        pictures = question_images(content, cfg)
    except ImageInputError as error:
        raise RequestRefused(400, str(error)) from None
    if not text.strip() and not pictures:
        raise RequestRefused(400, "the question is empty")
    if len(text) > cfg.max_question_chars:
        raise RequestRefused(400, f"the question is longer than {cfg.max_question_chars} characters")
    return text


def _checked_config(config: Any, cfg: Configuration, user_id: str) -> dict[str, Any]:
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise RequestRefused(400, "config must be an object")
    extra = sorted(set(config) - {"configurable"})
    if extra:
        raise RequestRefused(400, f"config key '{extra[0]}' cannot be set by a request; use config.configurable")
    settings = check_request_settings(config.get("configurable"), cfg)
    if settings.get("user_id", user_id) != user_id:
        raise RequestRefused(403, "user_id does not match the credential")
    settings["user_id"] = user_id
    settings.setdefault("thread_id", uuid.uuid4().hex)  # no thread id: a new conversation
    return {"configurable": settings}


def check_chat_body(route: str, body: Any, cfg: Configuration, user_id: str) -> CheckedBody:
    """A LangServe (or /chat/events) body with its question and settings checked."""
    if not isinstance(body, dict):
        raise RequestRefused(400, "the request body must be a JSON object")
    body = dict(body)
    if route == "/chat/batch":
        inputs = body.get("inputs")
        if not isinstance(inputs, list) or not inputs:
            raise RequestRefused(400, "inputs must be a non-empty list")
        if len(inputs) > cfg.max_batch_inputs:
            raise RequestRefused(400, f"a batch may carry at most {cfg.max_batch_inputs} inputs")
        for graph_input in inputs:
            check_question(graph_input, cfg)
        configs = body.get("config")
        if isinstance(configs, list):
            if len(configs) != len(inputs):
                raise RequestRefused(400, "config must be one object, or one per input")
            body["config"] = [_checked_config(config, cfg, user_id) for config in configs]
        else:
            body["config"] = _checked_config(configs, cfg, user_id)
        checked = body["config"] if isinstance(body["config"], list) else [body["config"]]
    else:
        check_question(body.get("input"), cfg)
        body["config"] = _checked_config(body.get("config"), cfg, user_id)
        checked = [body["config"]]
    return CheckedBody(body, sorted({config["configurable"]["thread_id"] for config in checked}))


def check_ingest_body(body: Any, cfg: Configuration, user_id: str) -> CheckedBody:
    """An upload filed under the caller: a different user_id is a 403, the conversation is claimed."""
    if not isinstance(body, dict):
        raise RequestRefused(400, "the request body must be a JSON object")
    body = dict(body)
    if body.get("user_id") not in (None, user_id):
        raise RequestRefused(403, "user_id does not match the credential")
    body["user_id"] = user_id
    conversation = body.get("conversation_id")
    if conversation is not None and (not isinstance(conversation, str) or len(conversation) > cfg.max_request_id_chars):
        raise RequestRefused(400, "conversation_id must be an id of at most "
                                  f"{cfg.max_request_id_chars} characters")
    return CheckedBody(body, [conversation] if conversation else [])
