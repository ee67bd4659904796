"""The one typed configuration: every threshold and knob Keel has, with the product's defaults.

It travels through LangGraph's ``config["configurable"]`` (LangGraph Studio, LangServe and
``graph.invoke(..., config=...)`` all pass it), so a deployment changes behaviour per request
without touching code. Connection settings default to environment variables; when those are unset
Keel starts its embedded servers (see ``keel/runtime/servers.py``).

The fields are declared in setting groups, one per concern (keel/core/settings/); ``Configuration``
inherits them all, so it stays one flat dataclass with every field by name, while a lower layer
takes only the group it reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import MISSING, dataclass, fields, is_dataclass
from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig

from keel.core.settings import (
    AnswerScoringSettings,
    ChatModelSettings,
    ConversationStoreSettings,
    ContinuationSettings,
    FollowUpSettings,
    GenerationSettings,
    GroundingSettings,
    GuardrailSettings,
    IdentitySettings,
    IngestionSettings,
    IngestRunSettings,
    OutageSettings,
    QualitySettings,
    RetrievalSettings,
    RetrieverSettings,
    RuntimeSettings,
    ServingSettings,
    SplitterSettings,
    StorageSettings,
)
from keel.core.settings import ChatRuntime, GroundingMode  # noqa: F401  (re-exported: older imports name them here)


def _runtime_context() -> Any:
    """The LangGraph run's context, when called inside a run that has one."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except Exception:  # outside a graph run
        return None


# Every group, and every combination of groups a lower layer reads (keel/core/settings/combined.py),
# is a base, so a Configuration is accepted wherever any of them is. The bases keep the groups' one
# order (plumbing first), so the fields read in reverse: who is asking first, the server's limits last.
@dataclass(kw_only=True)
class Configuration(
    ServingSettings,
    RetrieverSettings,
    FollowUpSettings,
    IngestRunSettings,
    SplitterSettings,
    ConversationStoreSettings,
    ChatModelSettings,
    AnswerScoringSettings,
    RuntimeSettings,
    OutageSettings,
    IngestionSettings,
    StorageSettings,
    RetrievalSettings,
    GuardrailSettings,
    GroundingSettings,
    QualitySettings,
    ContinuationSettings,
    GenerationSettings,
    IdentitySettings,
):
    """Everything Keel can be tuned with: every field of every setting group (keel/core/settings/),
    whose docs say what each one is for.

    Each field is marked ``metadata["scope"]``: "request" fields a caller of the multi-user server may
    set per request, within the bounds named there (keel/server/settings_policy.py); "deployment" fields
    come only from the server's configuration or environment."""

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> "Configuration":
        """The run's settings, from its context (LangGraph Studio sends it) and ``config["configurable"]``
        (LangServe, the CLI, ``graph.invoke``); configurable wins, keys that are not ours are ignored.

        Every node of a turn asks for them, so they are resolved once per distinct settings and then
        shared: the same context, the same configurable values and the same environment give the same
        (read-only) instance. Change a copy (``dataclasses.replace``), never the instance itself."""
        context = _runtime_context()
        configurable = (config or {}).get("configurable") or {}
        try:
            context_key, pinned = _context_key(context)
            key = (cls, context_key, _frozen_settings(cls, configurable), _frozen_defaults(cls))
        except _Unfrozen:  # a value that cannot be compared safely: resolve it every time
            return cls.resolve(context, configurable)
        with _RESOLVED_LOCK:
            found = _RESOLVED.get(key)
            if found is not None and found[0] is pinned:
                _RESOLVED.move_to_end(key)
                return found[1]
        resolved = cls.resolve(context, configurable)  # outside the lock: a bad setting raises here
        with _RESOLVED_LOCK:
            _RESOLVED[key] = (pinned, resolved)
            while len(_RESOLVED) > RESOLVED_MEMO_SIZE:
                _RESOLVED.popitem(last=False)
        return resolved

    @classmethod
    def resolve(cls, context: Any, configurable: dict) -> "Configuration":
        """Build the settings from a run's context and configurable (no memo)."""
        names = _init_names(cls)
        values: dict[str, Any] = {}
        for source in (context, configurable):
            if is_dataclass(source):
                source = {f.name: getattr(source, f.name) for f in fields(source)}
            if isinstance(source, dict):
                values.update({k: v for k, v in source.items() if k in names and v is not None})
        for name in ("blocked_terms", "doc_ids"):
            if isinstance(values.get(name), (list, str)):
                raw = values[name]
                values[name] = (raw,) if isinstance(raw, str) else tuple(raw)
        return cls(**values)


# Distinct run settings kept resolved (a few per user and conversation in flight); the oldest go first.
RESOLVED_MEMO_SIZE = 256
_RESOLVED: OrderedDict[tuple, tuple[Any, Configuration]] = OrderedDict()
_RESOLVED_LOCK = threading.Lock()


class _Unfrozen(Exception):
    """A setting's value has no safe, hashable form."""


@cache
def _init_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls) if f.init)


@cache
def _default_factories(cls: type) -> tuple:
    return tuple(f.default_factory for f in fields(cls) if f.default_factory is not MISSING)


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a setting's value that keeps its type: 1, 1.0 and True, or a list
    and a tuple, resolve to different settings."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return type(value), value
    if isinstance(value, (list, tuple)):
        return type(value), tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return dict, frozenset((_frozen(k), _frozen(v)) for k, v in value.items())
    raise _Unfrozen(type(value).__name__)


def _frozen_settings(cls: type, configurable: Any) -> Any:
    if not isinstance(configurable, dict):
        return _frozen(configurable)
    names = _init_names(cls)
    return frozenset((k, _frozen(v)) for k, v in configurable.items() if k in names and v is not None)


def _frozen_defaults(cls: type) -> tuple:
    """The defaults read when an instance is made (environment variables): a changed environment
    resolves anew."""
    return tuple(_frozen(factory()) for factory in _default_factories(cls))


def _context_key(context: Any) -> tuple[Any, Any]:
    """(key, pinned object): a dict context by value; any other (a dataclass, one object per run)
    by identity, kept alive in the memo's entry and checked with ``is``, so a reused id cannot match."""
    if context is None or isinstance(context, dict):
        return _frozen(context), None
    return ("context", id(context)), context
