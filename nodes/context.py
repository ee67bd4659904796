"""Helpers the answering nodes share: the question, history, passages and the token budget."""

from __future__ import annotations

from typing import Iterable, Sequence

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from chains.answer_messages import format_passage
from graph.configuration import Configuration
from graph.state import Passage, Source
from nodes.components import Components

# Chat-template tokens per message and a safety margin, so the prompt never overflows n_ctx.
TEMPLATE_OVERHEAD_TOKENS = 64


def message_text(message: AnyMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def latest_question(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            return message_text(message).strip()
    return ""


def history_before_question(messages: Sequence[AnyMessage], max_turns: int) -> list[AnyMessage]:
    """Earlier human/AI turns (not the current question), the newest ``max_turns`` pairs."""
    earlier = [m for m in list(messages)[:-1] if isinstance(m, (HumanMessage, AIMessage))]
    return earlier[-2 * max_turns :] if max_turns > 0 else []


def passages_from_documents(documents: Iterable[Document]) -> list[Passage]:
    passages: list[Passage] = []
    for document in documents:
        meta = document.metadata
        similarity = float(meta.get("max_similarity", meta.get("similarity", meta.get("score", 0.0))) or 0.0)
        passages.append(
            Passage(
                number=len(passages) + 1,
                text=document.page_content,
                source=str(meta.get("source", "unknown")),
                page=meta.get("page"),
                doc_id=str(meta.get("doc_id", "")),
                score=float(meta.get("score", similarity) or 0.0),
                similarity=similarity,
            )
        )
    return passages


def fit_passages(
    passages: Sequence[Passage], budget_tokens: int, cfg: Configuration, components: Components
) -> list[Passage]:
    """Passages in score order until the token budget is spent; the last one is cut to fit."""
    from models.tokenizer import truncate_to_tokens

    fitted: list[Passage] = []
    remaining = budget_tokens
    for passage in list(passages)[: cfg.max_context_parents]:
        if remaining <= 16:
            break
        cost = components.count_tokens(cfg, format_passage(passage)) + 2
        if cost > remaining:
            tokenizer = components.chat_tokenizer(cfg)
            text = truncate_to_tokens(tokenizer, passage["text"], remaining - 24)
            if not text:
                break
            passage = Passage(**{**passage, "text": text})
            cost = remaining
        fitted.append(Passage(**{**passage, "number": len(fitted) + 1}))
        remaining -= cost
    return fitted


def context_budget(cfg: Configuration, components: Components, fixed_texts: Iterable[str]) -> int:
    """Tokens left for passages: the window minus prompt, history, question and answer reserve."""
    used = sum(components.count_tokens(cfg, text) for text in fixed_texts)
    return cfg.llm_context_window - used - cfg.reserve_tokens - TEMPLATE_OVERHEAD_TOKENS


def sources_of(passages: Sequence[Passage], cited: Sequence[int] | None = None) -> list[Source]:
    """The source list under an answer: cited passages when the answer cites, else all shown."""
    chosen = [p for p in passages if not cited or p["number"] in cited]
    seen: set[tuple] = set()
    sources: list[Source] = []
    for p in chosen:
        key = (p["doc_id"], p["page"])
        if key in seen:
            continue
        seen.add(key)
        sources.append(Source(source=p["source"], page=p["page"], doc_id=p["doc_id"], score=round(p["score"], 4)))
    return sources


def mean_similarity(passages: Sequence[Passage]) -> float:
    if not passages:
        return 0.0
    return round(sum(p["similarity"] for p in passages) / len(passages), 4)
