"""The parts the nodes use, pluggable: chat model, embeddings, retriever, moderator, tokenizer.

``keel.graph.build_graph`` takes any of them from the user (their own BaseChatModel,
Embeddings, BaseRetriever); whatever is not given is created lazily from the configuration by the
factories in keel/models/ and retrievers/, once per process, on first use: importing the graph
(LangGraph Studio, ``from keel.graph import graph``) starts no server and loads no model.

The chat tokenizer, the embeddings and the similarity helper over them are looked up by every node
and for every passage counted; each ``Components`` keeps the one it found per settings that choose
it (model paths, endpoint, KEEL_HOME), so a turn finds them once, not once per step.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever

from keel.checks.language import detect_language
from keel.checks.model_moderation import (
    ClassifierModerator,
    GuardModerator,
    LanguageRoutedModerator,
    LayeredModerator,
)
from keel.checks.moderation import KeywordModerator, Moderator
from keel.checks.semantic import Semantic, semantic_for
from keel.core.configuration import Configuration
from keel.loaders.ocr import ocr_image
from keel.models.chat import get_chat_model
from keel.models.embeddings import get_embeddings
from keel.models.llama_guard import LlamaGuardClient, LlamaGuardError
from keel.models.model_limits import fitted_to_model
from keel.models.multilingual_embeddings import MultilingualE5Embeddings
from keel.models.safety_classifier import MULTILINGUAL_ARTEFACT_DIR, load_safety_classifier
from keel.models.tokenizer import get_chat_tokenizer
from keel.retrievers.factory import default_retriever

logger = logging.getLogger(__name__)

RetrieverFactory = Callable[[Configuration, "list[str] | None"], BaseRetriever]


class TokenCounter(Protocol):
    """Counts the tokens of a text as the chat model would."""
    def __call__(self, text: str) -> int: ...


@dataclass
class Components:
    """The parts a graph runs on (chat model, embeddings, retriever, moderator, tokenizer): given
    by the app that builds the graph, else Keel's defaults, made on first use."""
    chat_model: BaseChatModel | None = None
    embeddings: Embeddings | None = None
    retriever: BaseRetriever | None = None
    retriever_factory: RetrieverFactory | None = None
    moderator: Moderator | None = None
    tokenizer: Any = None
    image_reader: Callable[[bytes], str] | None = None  # a picture's text; default: Keel's OCR
    # what the lookups below found, per the settings that chose it
    _found: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _found_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def _once(self, key: tuple, make: Callable[[], Any]) -> Any:
        """``make()``'s result, kept under ``key``; a failure is not kept (the next call tries again)."""
        with self._found_lock:
            if key in self._found:
                return self._found[key]
        made = make()  # outside the lock: loading a model must not hold up other lookups
        with self._found_lock:
            return self._found.setdefault(key, made)

    def chat(self, cfg: Configuration) -> BaseChatModel:
        if self.chat_model is not None:
            return self.chat_model
        return get_chat_model(cfg)

    def read_image(self, cfg: Configuration, data: bytes) -> str:
        """The text of a question's picture: the application's own reader, else Tesseract (loaders/ocr.py)."""
        if self.image_reader is not None:
            return self.image_reader(data)
        return ocr_image(data, cfg).text

    def fitted(self, cfg: Configuration) -> Configuration:
        """``cfg`` with the context window Keel's chat model really takes (keel/models/model_limits.py);
        an application's own model is taken at the settings' word."""
        return cfg if self.chat_model is not None else fitted_to_model(cfg)

    def embedder(self, cfg: Configuration) -> Embeddings:
        if self.embeddings is not None:
            return self.embeddings
        return self._once(("embeddings", cfg.embedding_endpoint, cfg.embedding_model_path), lambda: get_embeddings(cfg))

    def similarity(self, cfg: Configuration) -> Semantic:
        """Cosine similarity with the embeddings (callable as ``similarity(text, others)``), its vector
        cache shared by every check of every turn."""
        if self.embeddings is not None:
            return self._once(("similarity", id(self.embeddings)), lambda: semantic_for(self.embeddings))
        return self._once(("similarity", cfg.embedding_endpoint, cfg.embedding_model_path),
                          lambda: semantic_for(self.embedder(cfg)))

    def retriever_for(self, cfg: Configuration, doc_ids: list[str] | None = None) -> BaseRetriever:
        """The user's retriever as given, else Keel's parent retriever scoped to this user."""
        if self.retriever is not None:
            return self.retriever
        if self.retriever_factory is not None:
            return self.retriever_factory(cfg, doc_ids)
        return default_retriever(cfg, self.embedder(cfg), doc_ids=doc_ids)

    def moderation(self, cfg: Configuration) -> Moderator:
        """The given moderator, else the keyword list in front of the configured backend's model (the
        offline classifier over the cached question vectors, or Llama Guard at its endpoint)."""
        if self.moderator is not None:
            return self.moderator
        return self._once(("moderation", cfg.moderation_backend, cfg.blocked_terms, cfg.moderation_threshold,
                           cfg.moderation_other_language_threshold, cfg.moderation_answer_threshold, cfg.language_min_confidence,
                           cfg.moderation_multilingual, cfg.moderation_multilingual_threshold,
                           cfg.moderation_refuse_categories, cfg.llama_guard_url, cfg.llama_guard_model,
                           cfg.llama_guard_api, cfg.llama_guard_timeout_s, cfg.moderation_fail_closed,
                           cfg.embedding_endpoint, cfg.embedding_model_path, id(self.embeddings)),
                          lambda: self._make_moderator(cfg))

    def _make_moderator(self, cfg: Configuration) -> Moderator:
        keywords = KeywordModerator(extra_terms=cfg.blocked_terms)
        if cfg.moderation_backend == "keywords":
            return keywords
        if cfg.moderation_backend == "llama_guard":
            if not cfg.llama_guard_url:
                raise ValueError("moderation_backend='llama_guard' needs llama_guard_url (the OpenAI-compatible "
                                 "server serving Llama Guard 3)")
            client = LlamaGuardClient(cfg.llama_guard_url, cfg.llama_guard_model, cfg.llama_guard_api,
                                      cfg.llama_guard_timeout_s)
            model: Moderator = GuardModerator(
                client.judge, cfg.moderation_refuse_categories, cfg.moderation_fail_closed, (LlamaGuardError,),
                lambda error: logger.warning("moderation: %s", error))
        else:
            model = self._classifier_moderator(cfg)
        return LayeredModerator((keywords, model))

    def _classifier_moderator(self, cfg: Configuration) -> Moderator:
        """The English head on the embedding model's vectors; with moderation_multilingual, text in another
        language goes to the multilingual head instead (its own encoder, paid only for such text)."""
        classifier = load_safety_classifier()
        trained_language = str(classifier.metadata.get("trained_language", "en"))

        def language(text: str) -> str:
            return detect_language(text, trained_language, cfg.language_min_confidence)

        english = ClassifierModerator(
            classifier.labels, classifier.probabilities, self._safety_vectors(cfg), cfg.moderation_threshold,
            cfg.moderation_refuse_categories, cfg.moderation_other_language_threshold, language, trained_language,
            cfg.moderation_answer_threshold)
        if not cfg.moderation_multilingual:
            return english
        multilingual = load_safety_classifier(MULTILINGUAL_ARTEFACT_DIR)
        other = ClassifierModerator(
            multilingual.labels, multilingual.probabilities, MultilingualE5Embeddings().load().query_vectors,
            cfg.moderation_multilingual_threshold, cfg.moderation_refuse_categories,
            answer_threshold=max(cfg.moderation_answer_threshold, cfg.moderation_multilingual_threshold))
        return LanguageRoutedModerator(english, other, language, trained_language)

    def _safety_vectors(self, cfg: Configuration):
        """The safety classifier reads vectors of the embedding model it was trained for: Keel's own
        embedder's (cached, so the question is embedded once per turn) when Keel makes the embeddings,
        else Keel's local embedding model, since an application's own embeddings are another model."""
        if self.embeddings is None:
            return self.similarity(cfg).vectors
        local = dataclasses.replace(cfg, embedding_endpoint=None)
        return self._once(("safety_vectors", cfg.embedding_model_path),
                          lambda: semantic_for(get_embeddings(local)).vectors)

    def chat_tokenizer(self, cfg: Configuration):
        if self.tokenizer is not None:
            return self.tokenizer
        key = (cfg.chat_tokenizer_path, cfg.chat_model_gguf, cfg.chat_model, cfg.model_tokenizers.get(cfg.chat_model),
               cfg.keel_home, cfg.model_pool_dir)
        return self._once(("tokenizer", *key),
                          lambda: get_chat_tokenizer(cfg))

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


DRAFT_STREAM_KEY = "__keel_draft_stream"  # the turn's custom stream, handed to an answer loop run apart


def draft_writer(cfg: Configuration, config: dict | None = None):
    """Where the answer loop streams its live draft (keel.token, keel.revert, ...): the turn's custom
    stream, handed in by the answering node (keel/chains/unseen_run.py) or this run's own, except while the deployment reviews answers (review_mode): a turn may then be held for a reviewer,
    which is only known once the loop is done, and a streamed token cannot be unsent. So with review
    on, the asker gets the settled answer only (or status awaiting_review), never a draft."""
    if cfg.review_mode != "off":
        return lambda event: None
    handed_in = ((config or {}).get("configurable") or {}).get(DRAFT_STREAM_KEY)
    return handed_in or stream_writer()
