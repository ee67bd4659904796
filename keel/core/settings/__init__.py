"""Keel's settings, one typed group per concern; ``keel.core.configuration.Configuration`` inherits
them all and is the one flat set LangGraph, LangServe and Studio see.

A lower layer takes only the group it reads (a loader ``IngestionSettings``, the vector store
``StorageSettings``...); a ``Configuration`` is accepted wherever a group is, since it is one of each.

    identity      who asks, in which conversation, about which documents (request scope)
    runtime       servers, model files, threads, timeouts
    outages       retries and bounds while MongoDB or the model is away
    generation    one model call: prompt, length, sampling, early end-of-sequence
    continuation  answering beyond max_new_tokens: continuation checks and dedup
    quality       the answer loop: parsing, scoring, retries
    grounding     strict grounding: gates, citations, checks, the fallback
    guardrails    the input budget and moderation
    inputs        pictures a question carries
    retrieval     k sizing, relevance, page expansion, parallel search, follow-ups
    storage       the vector index and how long documents live
    ingestion     file limits, splitter, images, n-gram hints
    serving       the multi-user server's limits
    review        which answers a person approves before the asker sees them

A function that truly reads two groups takes one of their combinations (combined.py), e.g.
``VectorStoreSettings`` (storage + runtime); ``Configuration`` inherits those too.

Every group is a ``CheckedSettings`` (checks.py): making one checks each value against its type and
the bounds in its field's metadata, and a bad one raises a ``ConfigurationError`` that names it.
"""

from keel.core.settings.combined import (
    AnswerScoringSettings,
    ChatModelSettings,
    ConversationStoreSettings,
    FollowUpSettings,
    IngestRunSettings,
    RetrievalWindowSettings,
    RetrieverSettings,
    SplitterSettings,
    VectorStoreSettings,
)
from keel.core.settings.continuation import ContinuationSettings
from keel.core.settings.generation import GenerationSettings
from keel.core.settings.grounding import GroundingMode, GroundingSettings
from keel.core.settings.guardrails import GuardrailSettings
from keel.core.settings.identity import IdentitySettings
from keel.core.settings.ingestion import IngestionSettings
from keel.core.settings.inputs import InputSettings
from keel.core.settings.outages import OutageSettings
from keel.core.settings.quality import QualitySettings
from keel.core.settings.retrieval import RetrievalSettings
from keel.core.settings.review import ReviewMode, ReviewSettings
from keel.core.settings.runtime import ChatRuntime, RuntimeSettings
from keel.core.settings.scope import DEPLOYMENT, REQUEST, SCOPES, Scope, default_scope, scope_of
from keel.core.settings.serving import ServingSettings
from keel.core.settings.storage import StorageSettings

__all__ = [
    "AnswerScoringSettings", "ChatModelSettings", "ConversationStoreSettings", "FollowUpSettings",
    "IngestRunSettings", "RetrievalWindowSettings", "RetrieverSettings", "SplitterSettings", "VectorStoreSettings",
    "ChatRuntime", "ContinuationSettings", "DEPLOYMENT", "GenerationSettings", "GroundingMode", "GroundingSettings",
    "GuardrailSettings", "IdentitySettings", "IngestionSettings", "InputSettings", "OutageSettings", "QualitySettings", "REQUEST",
    "RetrievalSettings", "ReviewMode", "ReviewSettings", "RuntimeSettings", "SCOPES", "Scope", "ServingSettings",
    "StorageSettings", "default_scope", "scope_of",
]
