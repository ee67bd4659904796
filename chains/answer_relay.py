"""The turn's final answer as a chat model's stream, for LangChain's standard ways of streaming.

``graph.stream(..., stream_mode="messages")``, ``astream_events`` (``on_chat_model_stream``) and
LangServe's /stream_events and /stream_log show what chat models stream. Keel's own model calls
are kept out of all of them (``chains/generation.py``, ``private_model_config``): what the model
writes carries reasoning markers, and a draft may still be cut, retracted or discarded by a check.
So once a turn's answer is final, the node that writes it says it again through ``AnswerRelay``, a
chat model that replies with the message it is given, in word-sized chunks under that message's
id. Run with the node's config, its chunks reach every client-streaming handler, and LangGraph
does not send the node's message a second time, since it has already seen that id.

Only the accepted answer goes out this way, because a chunk sent in these modes cannot be taken
back. The live draft, with its retractions (keel.revert, keel.discard), stays on
``stream_mode="custom"`` and the server's /chat/events.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config

from keel.core.configuration import Configuration

ANSWER_RUN_NAME = "keel_answer"  # the run's name in astream_events, LangServe's event streams and traces
ANSWER_ID_PREFIX = "keel-answer-"
_WORD = re.compile(r"\s*\S+|\s+")  # a word with the spacing before it; trailing spacing on its own


def word_pieces(text: str, words_per_chunk: int = 1) -> list[str]:
    """``text`` cut into pieces of ``words_per_chunk`` words, each with the spacing before it, so
    that joining the pieces gives the text back exactly (newlines and all)."""
    words = _WORD.findall(text)
    size = max(1, words_per_chunk)
    return ["".join(words[start:start + size]) for start in range(0, len(words), size)]


class AnswerRelay(BaseChatModel):
    """A chat model that replies with the last message it is given, unchanged: same text, same id,
    same extras, streamed in word-sized chunks. It writes nothing of its own."""

    name: str | None = ANSWER_RUN_NAME
    words_per_chunk: int = 1

    @property
    def _llm_type(self) -> str:
        return "keel-answer-relay"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        said = _said(messages)
        message = AIMessage(said.content, id=said.id, additional_kwargs=dict(said.additional_kwargs))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop=None, run_manager=None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        said = _said(messages)
        pieces = word_pieces(str(said.content), self.words_per_chunk) or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            # the last chunk says so and carries the extras: LangChain then adds no closing chunk of
            # its own (which would carry the run's id instead of the message's)
            yield ChatGenerationChunk(message=AIMessageChunk(
                content=piece, id=said.id, chunk_position="last" if last else None,
                additional_kwargs=dict(said.additional_kwargs) if last else {},
            ))


def _said(messages: list[BaseMessage]) -> BaseMessage:
    if not messages:
        raise ValueError("AnswerRelay replies with the last message it is given; it was given none")
    return messages[-1]


def relay_answer(message: AIMessage, config: RunnableConfig | None) -> AIMessage:
    """Stream ``message`` (the turn's final, checked answer) to whoever streams this run, and return
    it with the id its chunks carried: the node puts exactly this message in the state."""
    if not message.id:
        message = message.model_copy(update={"id": f"{ANSWER_ID_PREFIX}{uuid.uuid4()}"})
    cfg = Configuration.from_runnable_config(config)
    relay = AnswerRelay(words_per_chunk=cfg.answer_stream_words)
    relay.invoke([message], patch_config(config, run_name=ANSWER_RUN_NAME))
    return message
