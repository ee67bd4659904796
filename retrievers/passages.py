"""Retrieved documents as numbered passages, and what the nodes do with a list of them.

A LangChain ``Document`` from any retriever becomes a ``Passage`` (text, source, page, doc id,
score, similarity); lists of passages are merged without repeats, interleaved so that every
document is represented before any gets a second passage, filtered to the relevant ones, and
turned into the source list under an answer. Nothing here calls a model or a store.

A document from a user's own retriever rarely has Keel's keys: its id is then the Document's own
``id`` or the first of its metadata's ``id``, ``source``, ``file_path`` (else one made from its
text), and its source the first of ``source``, ``title``, ``file_path`` (else its id). Its
similarity was computed before it gets here (retrievers/scoring.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import chain, zip_longest

from langchain_core.documents import Document

from keel.core.settings.retrieval import RetrievalSettings
from keel.core.state import Passage, Source

KEY_TEXT_CHARS = 200  # two passages of one page whose text starts alike are the same passage
ID_KEYS = ("id", "source", "file_path")  # after Keel's doc_id and the Document's own id
SOURCE_KEYS = ("source", "title", "file_path")
TEXT_ID_CHARS = 16  # hex digits of the text's digest in the id of a document that names none


def _first(meta: dict, keys: Iterable[str]) -> str:
    return next((str(meta[key]) for key in keys if meta.get(key) not in (None, "")), "")


def document_id(document: Document) -> str:
    """The document a passage belongs to: Keel's ``doc_id``, else what the document calls itself."""
    meta = document.metadata
    named = _first(meta, ("doc_id",)) or (str(document.id) if document.id else "") or _first(meta, ID_KEYS)
    return named or "text-" + hashlib.sha1(document.page_content.encode("utf-8")).hexdigest()[:TEXT_ID_CHARS]


def document_source(document: Document) -> str:
    """A readable name for the sources list: the file or title, else the document's id."""
    return _first(document.metadata, SOURCE_KEYS) or document_id(document)


def passages_from_documents(documents: Iterable[Document]) -> list[Passage]:
    """Retrieved documents as numbered passages with their source, page and similarity."""
    passages: list[Passage] = []
    for document in documents:
        meta = document.metadata
        similarity = float(meta.get("max_similarity", meta.get("similarity", meta.get("score", 0.0))) or 0.0)
        passages.append(
            Passage(
                number=len(passages) + 1,
                text=document.page_content,
                source=document_source(document),
                page=meta.get("page"),
                doc_id=document_id(document),
                score=float(meta.get("score", similarity) or 0.0),
                similarity=similarity,
            )
        )
    return passages


def passage_key(passage: Passage) -> tuple:
    """What makes two passages the same: document, page and the start of the text."""
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
    """Over the relevance threshold, or from a file the user attached or uploaded here. Every
    passage has a similarity: a retriever that gives none had its documents scored on the way."""
    return passage["similarity"] >= cfg.relevance_threshold or passage["doc_id"] in user_files


def parent_ids_of(documents: list[Document], remembered: list[tuple[dict, str | None]] = ()) -> dict[tuple, str]:
    """passage_key -> parent id, for the follow-up cache's relevance check next turn."""
    ids = {passage_key(p): pid for p, pid in remembered if pid}
    for document, passage in zip(documents, passages_from_documents(documents), strict=False):
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


def citations_of(passages: Sequence[Passage], cited: Sequence[int] | None = None) -> list[dict]:
    """The passages behind an answer, numbered as its [Source N] citations, with file, page and the
    text the model was shown, so a reader can open each one: the cited passages when the answer
    cites, else every passage shown (the same choice as ``sources_markdown``; a small model often
    answers without citing)."""
    chosen = [p for p in passages if not cited or p["number"] in cited]
    return [{"number": p["number"], "source": p["source"], "page": p["page"], "doc_id": p["doc_id"], "text": p["text"]}
            for p in chosen]


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
