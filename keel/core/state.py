"""State schemas of the main graph and the answer subgraph, with their reducers.

typing_extensions.TypedDict (not typing.TypedDict) because LangServe builds pydantic models from
these schemas and pydantic rejects typing.TypedDict on Python 3.11. Fields a client need not send
are NotRequired, which keeps the graph's input schema narrow.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class AnswerStatus(str, Enum):
    """Why an answer is what it is. Only SUCCESS is an answer taken from the documents."""

    SUCCESS = "success"
    INSUFFICIENT_CONTEXT = "insufficient_context"
    LOW_CONFIDENCE = "low_confidence"
    HALLUCINATION_DETECTED = "hallucination_detected"
    NOT_SAFE = "not_safe"
    EXCEEDED_TOKEN_BUDGET = "exceeded_token_budget"
    ERROR = "error"
    AWAITING_REVIEW = "awaiting_review"  # held for a reviewer (review_mode): the answer is not shown yet
    REVIEW_REJECTED = "review_rejected"  # a reviewer rejected the draft: the fallback is shown instead

    @property
    def is_safe(self) -> bool:
        return self is AnswerStatus.SUCCESS


class Route(str, Enum):
    """Where route_query sends a question: one document, several, or none (the model's own knowledge)."""
    SINGLE_DOC = "single_doc"
    MULTI_DOC = "multi_doc"
    PRETRAINED_CORPUS = "pretrained_corpus"


class Usage(TypedDict):
    """Tokens a turn's model calls read and wrote."""
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


EMPTY_USAGE: Usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Sum token usage; a ``None`` update resets the counter (each turn starts from zero)."""
    if right is None:
        return dict(EMPTY_USAGE)  # type: ignore[return-value]
    left = left or EMPTY_USAGE
    return {key: int(left.get(key, 0)) + int(right.get(key, 0)) for key in EMPTY_USAGE}  # type: ignore[return-value]


def usage_from_metadata(meta: dict | None) -> Usage | None:
    """A LangChain message's ``usage_metadata`` (the server's own counts) as Keel's ``Usage``; None
    when the server sent none."""
    if not meta:
        return None
    prompt, completion = int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 total_tokens=int(meta.get("total_tokens", prompt + completion)))


class Passage(TypedDict):
    """One context passage shown to the model; ``number`` is what [Source N] cites."""

    number: int
    text: str
    source: str
    page: int | None
    doc_id: str
    score: float
    similarity: float


class Source(TypedDict):
    """A document an answer cites, as the turn returns it."""
    source: str
    page: int | None
    doc_id: str
    score: float


class InputState(TypedDict):
    """What a client sends: the new message(s). Who asks and in which conversation travel in config."""

    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict):
    """What a turn returns: the answer with its status, route, sources and quality."""
    messages: Annotated[list[AnyMessage], add_messages]
    answer: NotRequired[str]
    status: NotRequired[str]
    route: NotRequired[str]
    sources: NotRequired[list[Source]]
    quality: NotRequired[float]
    confidence: NotRequired[float]
    attempts: NotRequired[int]
    continuations: NotRequired[int]
    usage: NotRequired[Annotated[Usage, add_usage]]
    reasons: NotRequired[list[str]]
    grounding_score: NotRequired[float | None]
    parse_layer: NotRequired[str]  # parsing layer (xml, json, final_answer, regex, raw) of the accepted answer
    sections: NotRequired[dict[str, str] | None]  # answer_format "sectioned": citation, answer, explanation
    sources_markdown: NotRequired[str]  # the sources as markdown, numbered as the answer's [Source N]
    review: NotRequired[dict[str, Any] | None]  # human review: id, state, reviewer and when (nodes/review_answer.py)
    standalone_question: NotRequired[str]  # what the turn was searched and answered as (a follow-up, rewritten)


class KeelState(OutputState):
    """The main graph's full state. Per-turn fields are reset by the guardrails node."""

    question: NotRequired[str]
    guardrail: NotRequired[str]
    language: NotRequired[str]  # the question's (ISO 639-1): fallbacks and refusals are in it
    answer_language: NotRequired[str]  # the answer's: the question's where the chat model writes it (answer_languages)
    system_prompt: NotRequired[str]
    passages: NotRequired[list[Passage]]
    doc_ids: NotRequired[list[str]]
    subquestions: NotRequired[list[str]]  # what route_query searched the question as (chains/question_split.py)
    held_answer: NotRequired[dict[str, Any] | None]  # a turn waiting for review: never in the output
    images: NotRequired[list[dict[str, Any]]]  # the question's pictures as image parts, for a model that reads them
    image_note: NotRequired[str]  # what was read from the question's pictures, said with the answer
    last_standalone: NotRequired[str]  # the last answered turn's standalone question: what a follow-up leans on


class AnswerState(TypedDict):
    """State of the answer subgraph: one question, its passages, and the attempts so far."""

    question: str
    system_prompt: str
    route: str
    passages: list[Passage]
    history: list[AnyMessage]
    images: NotRequired[list[dict[str, Any]]]  # image parts sent with the question (a model that reads pictures)
    attempt: NotRequired[int]
    strategy: NotRequired[str]
    model: NotRequired[str]  # the pool model that wrote this attempt (chat_model, or escalation_model on a retry)
    draft: NotRequired[str]
    error: NotRequired[str]
    abstained: NotRequired[bool]
    answer: NotRequired[str]
    parse_layer: NotRequired[str]
    parse_error: NotRequired[str | None]
    attempt_continuations: NotRequired[int]  # this attempt's; ``continuations`` counts all attempts
    attempt_usage: NotRequired[Usage]
    timings: NotRequired[dict[str, float]]  # this attempt's generation_s, checks_s (validation_s added later)
    stops: NotRequired[list[str]]  # why this attempt's continuation stopped or a piece was dropped
    quality: NotRequired[float]
    deductions: NotRequired[dict[str, float]]
    grounding_score: NotRequired[float]
    dropped_sentences: NotRequired[int]  # unsupported sentences removed from a passing answer
    status: NotRequired[str]
    continuations: NotRequired[int]
    usage: NotRequired[Annotated[Usage, add_usage]]
    reasons: NotRequired[list[str]]
    best: NotRequired[dict[str, Any]]
    language: NotRequired[str]  # the answer's (ISO 639-1): an answer clearly in another is deducted
    sections: NotRequired[dict[str, str] | None]
