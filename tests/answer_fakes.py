"""Fakes for the answer loop's logic tests: a scripted chat model that streams and records what it
was sent, and keyword embeddings whose similarities are exact (shared content words)."""

from __future__ import annotations

import re
from typing import Any, Iterator

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from tests.fakes import BagOfWordsEmbeddings

STOP = frozenset("a an the of to in on at for by with and or but is are was were be it its this that as from".split())


class ScriptedChatModel(BaseChatModel):
    """Answers with the next scripted response, streamed in ``chunk_chars`` pieces.

    A response may be a (text, finish_reason) pair. Every call's messages and kwargs are kept.
    """

    responses: list[Any]
    chunk_chars: int = 4
    calls: list[dict] = []
    position: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _next(self) -> tuple[str, str | None]:
        response = self.responses[min(self.position, len(self.responses) - 1)]
        self.position += 1
        return response if isinstance(response, tuple) else (response, None)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        text, reason = self._next()
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text, response_metadata={"finish_reason": reason}))])

    def _stream(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        text, reason = self._next()
        pieces = [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)] or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            meta = {"finish_reason": reason} if last and reason else {}
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata=meta))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


class KeywordEmbeddings(BagOfWordsEmbeddings):
    """One dimension per content word: cosine = shared content words, exactly; disjoint texts = 0."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}

    def _embed(self, text: str) -> list[float]:
        words = [w for w in re.findall(r"\w+", text.lower()) if w not in STOP]
        for word in words:
            self.vocabulary.setdefault(word, len(self.vocabulary))
        vector = [0.0] * 2048
        for word in words:
            vector[self.vocabulary[word] % 2048] += 1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        return [v / norm for v in vector]
