"""Which settings a caller may send with a request, and within which bounds.

The allowlist is not kept here: it is every ``Configuration`` field of request scope (every field
is marked, keel/core/settings/scope.py: a setting group declares its fields' scope and a field may
name its own, ``metadata={"scope": "request", ...}``). The marks may name bounds:

* ``minimum`` / ``maximum``: numeric bounds; ``maximum_setting``: the deployment field holding the cap;
* ``max_chars_setting``: the deployment field capping a string (or each string of a list);
* ``max_items_setting``: the deployment field capping a list's length;
* ``choices_setting``: the deployment field listing what a request may choose besides the server's own value.

``Literal`` types give the allowed choices. Everything else about the deployment (URLs, paths,
runtimes, threads, models, index names, TTLs, patterns, limits) comes from the server's own
configuration, so a request can neither reach another server nor slow down other users.

These are the request's own bounds, on top of the checks every ``Configuration`` makes of its values
(keel/core/settings/checks.py, with the same ``minimum`` / ``maximum`` marks): the server's
configuration with the request's settings applied must be a valid one too, or the request is a 400
naming the setting (e.g. a max_new_tokens that leaves the prompt no room in llm_context_window).
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, Field, fields, replace
from functools import lru_cache
from typing import Any

from keel.core.configuration import Configuration, ConfigurationError
from keel.core.settings.checks import unknown_key_problems
from keel.core.settings.scope import REQUEST, scope_of
from keel.stores.tag_filters import validate_tag_id


class RequestRefused(Exception):
    """A request the server will not run; ``status`` is the HTTP status the client gets."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def is_request_setting(item: Field) -> bool:
    """Whether a caller may set this field per request (the others are the deployment's)."""
    return scope_of(item) == REQUEST


@lru_cache(maxsize=1)
def request_settings() -> dict[str, tuple[Field, Any]]:
    """The fields a request may set, with their resolved types."""
    hints = typing.get_type_hints(Configuration)
    return {item.name: (item, hints[item.name]) for item in fields(Configuration) if is_request_setting(item)}


@lru_cache(maxsize=1)
def _all_setting_names() -> frozenset[str]:
    return frozenset(item.name for item in fields(Configuration))


def check_request_settings(configurable: Any, cfg: Configuration) -> dict[str, Any]:
    """The request's settings, checked: a 400 names a forbidden, unknown or out-of-bounds key, or a
    setting the server's configuration cannot take with the others."""
    if configurable is None:
        return {}
    if not isinstance(configurable, dict):
        raise RequestRefused(400, "config.configurable must be an object")
    allowed = request_settings()
    checked: dict[str, Any] = {}
    for key, value in configurable.items():
        if key not in allowed:
            if key in _all_setting_names():
                raise RequestRefused(400, f"setting '{key}' is fixed by the server's configuration; "
                                          f"a request may set: {', '.join(sorted(allowed))}")
            raise RequestRefused(400, unknown_key_problems([key], _all_setting_names())[str(key)])
        if value is None:
            continue
        item, hint = allowed[key]
        checked[key] = _checked_value(key, value, hint, item.metadata, cfg)
    try:
        replace(cfg, **checked)
    except ConfigurationError as error:
        raise RequestRefused(400, f"invalid setting: {error}") from None
    return checked


def _checked_value(key: str, value: Any, hint: Any, marks: typing.Mapping, cfg: Configuration) -> Any:
    base = _without_none(hint)
    origin = typing.get_origin(base)
    if origin is typing.Literal:
        choices = typing.get_args(base)
        if value not in choices:
            raise RequestRefused(400, f"setting '{key}' must be one of {', '.join(map(str, choices))}")
        return value
    if base is bool:
        if not isinstance(value, bool):
            raise RequestRefused(400, f"setting '{key}' must be true or false")
        return value
    if base in (int, float):
        return _checked_number(key, value, base, marks, cfg)
    if base is str:
        return _checked_id(key, value, marks, cfg)
    if origin in (tuple, list):
        return _checked_list(key, value, marks, cfg)
    raise RequestRefused(400, f"setting '{key}' cannot be set per request")


def _without_none(hint: Any) -> Any:
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _checked_number(key: str, value: Any, kind: type, marks: typing.Mapping, cfg: Configuration) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise RequestRefused(400, f"setting '{key}' must be {'an integer' if kind is int else 'a number'}")
    low = marks.get("minimum")
    high = getattr(cfg, marks["maximum_setting"]) if "maximum_setting" in marks else marks.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        raise RequestRefused(400, f"setting '{key}' must be between {low} and {high}, got {value}")
    above = marks.get("exclusive_minimum")
    if above is not None and value <= above:
        raise RequestRefused(400, f"setting '{key}' must be greater than {above}, got {value}")
    return value


def _checked_id(key: str, value: Any, marks: typing.Mapping, cfg: Configuration) -> str:
    try:
        validate_tag_id(key, value)
    except ValueError as error:
        raise RequestRefused(400, f"setting '{key}' is not a valid id") from error
    limit = getattr(cfg, marks["max_chars_setting"]) if "max_chars_setting" in marks else None
    if limit is not None and len(value) > limit:
        raise RequestRefused(400, f"setting '{key}' is longer than {limit} characters")
    if "choices_setting" in marks:
        allowed = {getattr(cfg, key), *getattr(cfg, marks["choices_setting"])}
        if value not in allowed:
            raise RequestRefused(400, f"setting '{key}' must be one of {', '.join(sorted(allowed))} on this server")
    return value


def _checked_list(key: str, value: Any, marks: typing.Mapping, cfg: Configuration) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise RequestRefused(400, f"setting '{key}' must be a list")
    limit = getattr(cfg, marks["max_items_setting"]) if "max_items_setting" in marks else None
    if limit is not None and len(value) > limit:
        raise RequestRefused(400, f"setting '{key}' may list at most {limit} items")
    return [_checked_id(key, item, marks, cfg) for item in value]


IDENTITY_FIELDS = frozenset({"user_id", "thread_id"})


def deployment_settings(cfg: Configuration) -> dict[str, Any]:
    """The server's own values that differ from the defaults: sent with each run so the graph uses
    the server's configuration. A deployment-scope value always holds (run_configurable puts the
    request's checked settings on top, and a request cannot name one); a request-scope value is
    the deployment's default for what a request leaves out. Who asks and in which conversation
    always come from the request's credential and body, never from here. Secrets (passwords, API
    keys: the fields kept out of the settings' repr) are never sent: LangGraph stores a run's
    configurable strings in each checkpoint's metadata, in MongoDB; a run reads them from the
    environment like the server did."""
    defaults = Configuration()
    overrides = {}
    for item in fields(Configuration):
        if item.name in IDENTITY_FIELDS or item.default is MISSING and item.default_factory is MISSING:
            continue
        if not item.repr:  # a secret
            continue
        value = getattr(cfg, item.name)
        if value != getattr(defaults, item.name):
            overrides[item.name] = value
    return overrides


def run_configurable(requested: Any, cfg: Configuration, user_id: str, deployment: dict[str, Any]) -> dict[str, Any]:
    """The configurable a run gets: the deployment's values, the request's checked settings, and
    the caller's own user id (a request naming another user is refused with a 403)."""
    checked = check_request_settings(requested, cfg)
    named = checked.get("user_id")
    if named is not None and named != user_id:
        raise RequestRefused(403, "user_id does not match the credential")
    return {**deployment, **checked, "user_id": user_id}
