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

from dataclasses import dataclass, fields, is_dataclass
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
        """Build from the run's context (LangGraph Studio sends it) and ``config["configurable"]``
        (LangServe, the CLI, ``graph.invoke``); configurable wins, keys that are not ours are ignored."""
        names = {f.name for f in fields(cls) if f.init}
        values: dict[str, Any] = {}
        for source in (_runtime_context(), (config or {}).get("configurable") or {}):
            if is_dataclass(source):
                source = {f.name: getattr(source, f.name) for f in fields(source)}
            if isinstance(source, dict):
                values.update({k: v for k, v in source.items() if k in names and v is not None})
        for name in ("blocked_terms", "doc_ids"):
            if isinstance(values.get(name), (list, str)):
                raw = values[name]
                values[name] = (raw,) if isinstance(raw, str) else tuple(raw)
        return cls(**values)
