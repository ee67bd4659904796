"""The one typed configuration: every threshold and knob Keel has, with the product's defaults.

It travels through LangGraph's ``config["configurable"]`` (LangGraph Studio, LangServe and
``graph.invoke(..., config=...)`` all pass it) and a run's context (``graph.invoke(..., context=...)``,
Studio), so a deployment changes behaviour per request without touching code. Connection settings
default to environment variables; when those are unset Keel starts its embedded servers (see
``keel/runtime/servers.py``).

Every value is checked when a configuration is made (keel/core/settings/checks.py): a wrong type, a
value out of bounds, a choice that does not exist or a key that is not a setting raises a
``ConfigurationError`` naming each bad setting, before any model is called.

The fields are declared in setting groups, one per concern (keel/core/settings/); ``Configuration``
inherits them all, so it stays one flat dataclass with every field by name, while a lower layer
takes only the group it reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import MISSING, dataclass, fields, is_dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # for annotations only: importing langchain_core costs a short command a tenth of a second
    from langchain_core.runnables import RunnableConfig

from keel.core.settings import (
    AnswerScoringSettings,
    ChatModelSettings,
    ContinuationSettings,
    ConversationStoreSettings,
    FollowUpSettings,
    GenerationSettings,
    GroundingSettings,
    GuardrailSettings,
    IdentitySettings,
    IngestionSettings,
    IngestRunSettings,
    InputSettings,
    OutageSettings,
    QualitySettings,
    RetrievalSettings,
    RetrieverSettings,
    ReviewSettings,
    RuntimeSettings,
    ServingSettings,
    SplitterSettings,
    StorageSettings,
)
from keel.core.settings.checks import SCHEMA_KEYWORDS, ConfigurationError, unknown_key_problems
from keel.core.settings.scope import REQUEST, SCOPES, Scope, scope_of

# Keys LangGraph, LangChain and LangGraph's server (Studio, ``langgraph dev``, the LangGraph platform) write
# into a run's ``config["configurable"]`` themselves. They are not Keel settings, so a configurable may carry
# them; any other key that is not a setting is refused, so a misspelt setting is never ignored silently.
# As found in langgraph 1.2 (thread_id, checkpoint_ns / _id / _map, "__pregel_*") and langgraph-api 0.16
# (run_id, assistant_id, graph_id, cron_id, user_id, "langgraph_auth_*", "langgraph_request_id", "__*__"
# timing, tracing and encryption keys, the request's "x-*" headers and user agent, "langsmith-*" tracing).
# A deployment that passes other headers into runs (langgraph.json http.configurable_headers) names them "x-...".
LANGGRAPH_CONFIGURABLE_KEYS = frozenset({
    "thread_id", "thread_ts", "checkpoint_ns", "checkpoint_id", "checkpoint_map", "run_id", "assistant_id",
    "graph_id", "cron_id", "user_id", "user-agent",
})
LANGGRAPH_CONFIGURABLE_PREFIXES = ("__", "langgraph_", "checkpoint_", "x-", "langsmith-")


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
@dataclass(kw_only=True, frozen=True)
class Configuration(
    ServingSettings,
    ReviewSettings,
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
    InputSettings,
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
    come only from the server's configuration or environment.

    Made with a key that is not a setting, or a value that does not fit its field, it raises a
    ``ConfigurationError`` naming each (with the nearest setting's name for a misspelt key)."""

    # The scopes whose fields the exported JSON schema lists (every field; RunContext: the request ones).
    SCHEMA_SCOPES: ClassVar[tuple[Scope, ...]] = SCOPES

    def __new__(cls, *args: Any, **values: Any) -> Configuration:
        """Refuse keys that are not settings before the generated ``__init__`` sees them, so the error
        names each and suggests the setting probably meant (LangGraph makes a run's context this way)."""
        unknown = [key for key in values if key not in _init_names(cls)]
        if unknown:
            raise ConfigurationError(unknown_key_problems(unknown, _init_names(cls)))
        return super().__new__(cls)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema LangGraph Studio shows (``graph.get_context_jsonschema()``): each field with its
        doc as its description and its bounds, only the fields of ``SCHEMA_SCOPES``."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        return documented_schema(schema, cls, cls.SCHEMA_SCOPES)

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> Configuration:
        """The run's settings, from its context (LangGraph Studio sends it) and ``config["configurable"]``
        (LangServe, the CLI, ``graph.invoke``); configurable wins. A configurable key that is neither a
        setting nor one of LangGraph's own (``LANGGRAPH_CONFIGURABLE_KEYS``) is refused.

        Every node of a turn asks for them, so they are resolved once per distinct settings and then
        shared: the same context, the same configurable values and the same environment give the same
        (read-only) instance. Change a copy (``dataclasses.replace``), never the instance itself."""
        context = _runtime_context()
        configurable = (config or {}).get("configurable") or {}
        _refuse_unknown_keys(cls, context, configurable)  # before the memo: a known entry never hides one
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
    def resolve(cls, context: Any, configurable: dict) -> Configuration:
        """Build the settings from a run's context and configurable (no memo), checked: every key of a
        dict context must be a setting, every key of configurable a setting or LangGraph's own."""
        _refuse_unknown_keys(cls, context, configurable)
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
        if values.get("thread_id") is not None and not isinstance(values["thread_id"], str):
            values["thread_id"] = str(values["thread_id"])  # LangGraph takes any id (a UUID, a number) as a thread's
        return cls(**values)


class RunContext(Configuration):
    """The context of a run of Keel's graph (its ``context_schema``): every setting, checked, is accepted
    (``graph.invoke(..., context={...})``), while the JSON schema LangGraph Studio shows, and filters a
    run's context by, lists only the request settings, each with its description. Deployment settings
    (servers, models, limits) come from the environment or ``config["configurable"]``, never from
    Studio's form, where the multi-user auth would refuse them anyway (keel/server/studio_runs.py)."""

    SCHEMA_SCOPES: ClassVar[tuple[Scope, ...]] = (REQUEST,)


def documented_schema(schema: dict[str, Any], cls: type, scopes: tuple[Scope, ...]) -> dict[str, Any]:
    """``schema`` (a settings dataclass's JSON schema) with each field's doc as its description, its
    bounds in JSON Schema's words, and only the fields whose scope is in ``scopes``."""
    properties = schema.get("properties", {})
    for item in fields(cls):
        if item.name not in properties:
            continue
        if scope_of(item) not in scopes:
            del properties[item.name]
            continue
        described = properties[item.name]
        if item.metadata.get("doc"):
            described["description"] = item.metadata["doc"]
        # a plain type, not a union, takes its bounds; a list's string bounds belong to its items
        bounded = described.get("items") if described.get("type") == "array" else described
        if isinstance(bounded, dict) and "type" in bounded:
            bounded.update({SCHEMA_KEYWORDS[mark]: value for mark, value in item.metadata.items()
                            if mark in SCHEMA_KEYWORDS})
    if "required" in schema:
        schema["required"] = [name for name in schema["required"] if name in properties]
    return schema


def _refuse_unknown_keys(cls: type, context: Any, configurable: Any) -> None:
    """A dict context is Keel's alone: any key that is not a setting is refused. Configurable is shared
    with LangGraph and its server: their own keys pass, any other that is not a setting is refused."""
    names = _init_names(cls)
    unknown = [key for key in context if key not in names] if isinstance(context, dict) else []
    if isinstance(configurable, dict):
        unknown += [key for key in configurable
                    if key not in names and not _is_langgraph_key(key) and key not in unknown]
    if unknown:
        raise ConfigurationError(unknown_key_problems(unknown, names))


def _is_langgraph_key(key: Any) -> bool:
    return isinstance(key, str) and (
        key in LANGGRAPH_CONFIGURABLE_KEYS or key.startswith(LANGGRAPH_CONFIGURABLE_PREFIXES))


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
