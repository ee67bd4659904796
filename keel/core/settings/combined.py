"""Settings a part of Keel reads from more than one group, as one type.

A function that reads two groups takes one of these; ``Configuration`` inherits each of them, so a
full configuration is accepted wherever a combination is, and a combination is accepted wherever
one of its groups is (it can be handed down to the functions it calls).

Bases are always listed in one order, plumbing first and who is asking last (runtime, outages,
ingestion, storage, retrieval, guardrails, grounding, quality, continuation, generation, identity;
a combination that holds another lists it first),
so ``Configuration`` can inherit every combination; its fields then read in the reverse order.
"""

from __future__ import annotations

from dataclasses import dataclass

from keel.core.settings.generation import GenerationSettings
from keel.core.settings.grounding import GroundingSettings
from keel.core.settings.identity import IdentitySettings
from keel.core.settings.ingestion import IngestionSettings
from keel.core.settings.outages import OutageSettings
from keel.core.settings.quality import QualitySettings
from keel.core.settings.retrieval import RetrievalSettings
from keel.core.settings.runtime import RuntimeSettings
from keel.core.settings.storage import StorageSettings


@dataclass(kw_only=True, frozen=True)
class ChatModelSettings(RuntimeSettings, GenerationSettings):
    """The chat model: where it runs (runtime) and how long and how randomly it writes (generation)."""


@dataclass(kw_only=True, frozen=True)
class VectorStoreSettings(RuntimeSettings, StorageSettings):
    """The vector index (storage) and the Redis server that holds it (runtime)."""


@dataclass(kw_only=True, frozen=True)
class ConversationStoreSettings(RuntimeSettings, OutageSettings):
    """The MongoDB conversation store (runtime) and what a save does while it is away (outages)."""


@dataclass(kw_only=True, frozen=True)
class RetrievalWindowSettings(RuntimeSettings, RetrievalSettings):
    """Children per retrieval pass, sized from the chat model's context window (llm_context_window)."""


@dataclass(kw_only=True, frozen=True)
class AnswerScoringSettings(GroundingSettings, QualitySettings):
    """The quality score: its own deductions (quality) and the grounding and focus terms (grounding)."""


@dataclass(kw_only=True, frozen=True)
class SplitterSettings(RuntimeSettings, IngestionSettings):
    """The parent-child splitter: chunk sizes and hints (ingestion), counted in tokens of the embedding
    model's tokenizer (runtime: embedding_model_path)."""


@dataclass(kw_only=True, frozen=True)
class IngestRunSettings(SplitterSettings, StorageSettings):
    """One upload: loading and splitting (ingestion, with the embedding model's tokenizer) and the
    batches it is embedded and stored in (storage)."""


@dataclass(kw_only=True, frozen=True)
class FollowUpSettings(StorageSettings, RetrievalSettings, IdentitySettings):
    """The follow-up cache: its rules (retrieval), its keys under the index name (storage), per
    conversation and user (identity)."""


@dataclass(kw_only=True, frozen=True)
class RetrieverSettings(VectorStoreSettings, RetrievalWindowSettings, IdentitySettings):
    """A user's parent-document retriever: whose documents (identity), how many children (retrieval
    and the model's window) and the vector store it searches."""
