"""Retrieved documents as numbered passages, and what the nodes do with a list of them.

A LangChain ``Document`` from any retriever becomes a ``Passage`` (text, source, page, doc id,
score, similarity); lists of passages are merged without repeats, interleaved so that every
document is represented before any gets a second passage, filtered to the relevant ones, and
turned into the source list under an answer. Nothing here calls a model or a store.
"""

from __future__ import annotations

from itertools import chain, zip_longest
from typing import Iterable, Sequence

from langchain_core.documents import Document

from keel.core.settings.retrieval import RetrievalSettings
from keel.core.state import Passage, Source

KEY_TEXT_CHARS = 200  # two passages of one page whose text starts alike are the same passage


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


def passage_key(passage: Passage) -> tuple:
    return (passage["doc_id"], passage["page"], passage["text"][:KEY_TEXT_CHARS])


def merge_passages(*lists: Sequence[Passage]) -> list[Passage]:
    """The lists one after the other without repeats (same document, page and text), renumbered."""
    merged: dict[tuple, Passage] = {}
    for passages in lists:
        for passage in passages:
            merged.setdefault(passage_key(passage), passage)
    return [Passage(**{**p, "number": i}) for i, p in enumerate(merged.values(), 1)]


def interleave_by_document(passages: Sequence[Passage]) -> list[Passage]:
    """Each document's best passage first (documents by their best similarity), then each
    one's second, ...: every document is represented before any gets a second passage."""
    groups: dict[str, list[Passage]] = {}
    for passage in passages:
        groups.setdefault(passage["doc_id"], []).append(passage)
    ordered = sorted(groups.values(), key=lambda group: -max(p["similarity"] for p in group))
    rounds = [p for p in chain.from_iterable(zip_longest(*ordered)) if p is not None]
    return merge_passages(rounds)


def is_relevant(passage: Passage, cfg: RetrievalSettings, user_files: set[str] | frozenset[str] = frozenset()) -> bool:
    """Over the relevance threshold; or from a file the user attached or uploaded here; or from a
    retriever that reports no similarity at all (a user's own, trusted as-is)."""
    if passage["similarity"] >= cfg.relevance_threshold or passage["doc_id"] in user_files:
        return True
    return passage["similarity"] == 0.0 and passage["score"] == 0.0


def parent_ids_of(documents: list[Document], remembered: list[tuple[dict, str | None]] = ()) -> dict[tuple, str]:
    """passage_key -> parent id, for the follow-up cache's relevance check next turn."""
    ids = {passage_key(p): pid for p, pid in remembered if pid}
    for document, passage in zip(documents, passages_from_documents(documents)):
        parent_id = document.metadata.get("parent_id") or document.id
        if parent_id:
            ids.setdefault(passage_key(passage), parent_id)
    return ids


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


def sources_markdown(passages: Sequence[Passage], cited: Sequence[int] | None = None) -> str:
    """The source list as markdown under the answer, numbered as the answer's [Source N] citations
    (cited passages when the answer cites, else every passage shown); passages of one page share a line."""
    chosen = [p for p in passages if not cited or p["number"] in cited]
    lines: dict[tuple, list] = {}
    for p in chosen:
        entry = lines.setdefault((p["doc_id"], p["page"]), [[], p])
        entry[0].append(p["number"])
    if not lines:
        return ""
    rows = []
    for numbers, p in lines.values():
        page = f", page {p['page']}" if p.get("page") else ""
        rows.append(f"- {', '.join(f'[Source {n}]' for n in numbers)} {p['source']}{page}")
    return "**Sources:**\n" + "\n".join(rows)
