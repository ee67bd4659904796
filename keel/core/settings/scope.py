"""Who may set a setting: the deployment, or also the caller of one request.

Every field of every setting group carries ``metadata["scope"]``: a group declares the scope of its
fields with ``@default_scope(...)`` and a field that differs names its own (``metadata={"scope": ...}``).
keel/server/settings_policy.py lets a request set exactly the request-scope fields; a
deployment-scope field (URLs, paths, models, index names, TTLs, patterns, limits) comes only from
the server's configuration or environment, so one caller cannot reach another server, read another
user's data or loosen the limits that protect the others.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from types import MappingProxyType
from typing import Literal, TypeVar

Scope = Literal["request", "deployment"]
REQUEST: Scope = "request"
DEPLOYMENT: Scope = "deployment"
SCOPES: tuple[Scope, ...] = (REQUEST, DEPLOYMENT)

T = TypeVar("T", bound=type)


def default_scope(scope: Scope):
    """Class decorator (above ``@dataclass``): the group's own fields that name no scope get ``scope``."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")

    def mark(cls: T) -> T:
        if not is_dataclass(cls):
            raise TypeError(f"{cls.__name__}: put @default_scope above @dataclass")
        own = cls.__dict__.get("__annotations__", {})
        for item in fields(cls):
            if item.name not in own:
                continue  # inherited: its own group marked it
            named = item.metadata.get("scope")
            if named is None:
                item.metadata = MappingProxyType({**item.metadata, "scope": scope})
            elif named not in SCOPES:
                raise ValueError(f"{cls.__name__}.{item.name}: scope must be one of {SCOPES}, got {named!r}")
        return cls

    return mark


def scope_of(item) -> Scope | None:
    """The scope a dataclass field is marked with (None: unmarked, which the tests refuse)."""
    return item.metadata.get("scope")
