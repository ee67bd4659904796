"""The parts the nodes use, pluggable: chat model, embeddings, retriever, moderator, tokenizer.

``keel.graph.build_graph`` takes any of them from the user (their own BaseChatModel,
Embeddings, BaseRetriever); whatever is not given is created lazily from the configuration by the
factories in keel/models/ and retrievers/, once per process, on first use: importing the graph
(LangGraph Studio, ``from keel.graph import graph``) starts no server and loads no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever

from keel.checks.moderation import KeywordModerator, Moderator
from keel.core.configuration import Configuration
from keel.models.chat import get_chat_model
from keel.models.embeddings import get_embeddings
from keel.models.tokenizer import get_chat_tokenizer
from keel.retrievers.factory import default_retriever

RetrieverFactory = Callable[[Configuration, "list[str] | None"], BaseRetriever]


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


@dataclass
class Components:
    chat_model: BaseChatModel | None = None
    embeddings: Embeddings | None = None
    retriever: BaseRetriever | None = None
    retriever_factory: RetrieverFactory | None = None
    moderator: Moderator | None = None
    tokenizer: Any = None

    def chat(self, cfg: Configuration) -> BaseChatModel:
        if self.chat_model is not None:
            return self.chat_model
        return get_chat_model(cfg)

    def embedder(self, cfg: Configuration) -> Embeddings:
        if self.embeddings is not None:
            return self.embeddings
        return get_embeddings(cfg)

    def retriever_for(self, cfg: Configuration, doc_ids: list[str] | None = None) -> BaseRetriever:
        """The user's retriever as given, else Keel's parent retriever scoped to this user."""
        if self.retriever is not None:
            return self.retriever
        if self.retriever_factory is not None:
            return self.retriever_factory(cfg, doc_ids)
        return default_retriever(cfg, self.embedder(cfg), doc_ids=doc_ids)

    def moderation(self, cfg: Configuration) -> Moderator:
        return self.moderator or KeywordModerator(extra_terms=cfg.blocked_terms)

    def chat_tokenizer(self, cfg: Configuration):
        if self.tokenizer is not None:
            return self.tokenizer
        return get_chat_tokenizer(cfg)

    def count_tokens(self, cfg: Configuration, text: str) -> int:
        tokenizer = self.chat_tokenizer(cfg)
        if callable(getattr(tokenizer, "encode", None)):
            return len(tokenizer.encode(text, add_special_tokens=False))
        return int(tokenizer(text))


def stream_writer():
    """LangGraph's custom stream writer inside a run; a no-op outside one (direct calls, tests)."""
    try:
        from langgraph.config import get_stream_writer

        return get_stream_writer()
    except Exception:  # noqa: BLE001 - not inside a LangGraph run
        return lambda event: None
