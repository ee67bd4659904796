"""Parallel sub-question search, and several retrievers sharing one pass's K_max children.

A compound question ("Who built the lighthouse and when was it painted?") is split into
sub-questions without a model call: on question marks, and on "and" / "as well as" / ";" only
where the part after it starts like a question of its own (a wh-word or an auxiliary verb) and
both parts have at least three words, so "What are the fees and opening hours?" stays whole.

Every (sub-question, scope) pair is one retriever; their k are apportioned from K_max by
Hamilton's method (retrievers/k_sizing.py) and all run at once in a thread pool. With Keel's
retrievers each distinct sub-question is embedded once, in one batch, before the searches (on a
small CPU the embedding is the costly part and threads would only fight over it), and kept in a
small per-process memo, so the nodes of one turn (route_query, then multi_doc_answer) embed a
question once. Results are merged round-robin, so each sub-question is represented before any
gets a second parent. Given the embeddings, documents a retriever returns without a similarity
(a user's own) are scored against their sub-question first (retrievers/scoring.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig

from keel.checks.semantic import semantic_for
from keel.core.configuration import Configuration
from keel.core.settings.retrieval import RetrievalSettings
from keel.retrievers.k_sizing import apportion_children
from keel.retrievers.parent_document import KeelParentRetriever
from keel.retrievers.scoring import with_similarities

# A retriever maker (Keel's default_retriever or a user's own) sees the whole configuration.
RetrieverMaker = Callable[[Configuration, "list[str] | None"], BaseRetriever]

QUESTION_STARTERS = frozenset(
    "who whom whose what which when where why how is are was were do does did can could will would "
    "should shall may might must has have had".split()
)
_CONJUNCTION = re.compile(r"\s*(?:;|,?\s+and\s+(?:also\s+)?|,?\s+as\s+well\s+as\s+)", re.IGNORECASE)
_QUESTION_END = re.compile(r"(?<=\?)\s+")
_WORD = re.compile(r"[\w'’-]+")
_DEFAULTS = RetrievalSettings()


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _as_question(text: str) -> str:
    text = text.strip().rstrip(",;")
    return text if text.endswith("?") else text.rstrip(".!") + "?"


def _split_on_conjunctions(question: str, min_words: int) -> list[str]:
    """Split where the next part starts with a question word; both parts >= ``min_words`` words."""
    parts: list[str] = []
    rest = question.strip().rstrip("?").strip()
    start = 0
    for match in _CONJUNCTION.finditer(rest):
        left, right = rest[start : match.start()], rest[match.end() :]
        right_words = _words(right)
        if not right_words or right_words[0].lower() not in QUESTION_STARTERS:
            continue
        if len(_words(left)) < min_words or len(right_words) < min_words:
            continue
        parts.append(left)
        start = match.end()
    parts.append(rest[start:])
    if len(parts) == 1:
        return [question.strip()]
    return [_as_question(part) for part in parts]


def split_subquestions(question: str, max_parts: int | None = None, min_words: int | None = None) -> list[str]:
    """The sub-questions of ``question`` (just ``[question]`` when it is not compound).

    Deterministic and conservative. Statements (and questions under ``min_words`` words, default
    cfg.subquestion_min_words) before a question stay with it as its context.
    More parts than ``max_parts`` (default cfg.max_subquestions): the last ones are searched
    together as one."""
    max_parts = _DEFAULTS.max_subquestions if max_parts is None else max_parts
    min_words = _DEFAULTS.subquestion_min_words if min_words is None else min_words
    question = " ".join(question.split())
    if not question or max_parts <= 1:
        return [question] if question else []
    sentences = [s for s in _QUESTION_END.split(question) if s.strip()]
    pieces: list[str] = []
    pending = ""
    for sentence in sentences:
        is_question = sentence.rstrip().endswith("?") and len(_words(sentence)) >= min_words
        if not is_question and sentence is not sentences[-1]:
            pending = f"{pending} {sentence}".strip()  # a statement or "Really?": context for the next one
            continue
        for part in _split_on_conjunctions(sentence, min_words):
            pieces.append(f"{pending} {part}".strip() if pending else part)
            pending = ""
    if len(pieces) <= 1:
        return [question]
    if len(pieces) > max_parts:
        pieces = pieces[: max_parts - 1] + [" ".join(pieces[max_parts - 1 :])]
    return pieces


def document_key(document: Document) -> str:
    """Identity for de-duplication: the parent id, else (doc_id, page, text)."""
    meta = document.metadata
    if document.id or meta.get("parent_id"):
        return f"id:{document.id or meta['parent_id']}"
    digest = hashlib.sha1(document.page_content.encode("utf-8")).hexdigest()[:16]
    return f"doc:{meta.get('doc_id', '')}:{meta.get('page', '')}:{digest}"


def merge_round_robin(lists: Sequence[Sequence[Document]]) -> list[Document]:
    """First of each list, then the second of each, ...; a document seen again keeps its first
    place and the higher of its scores (a parent two sub-questions found is the more relevant)."""
    merged: dict[str, Document] = {}
    longest = max((len(items) for items in lists), default=0)
    for position in range(longest):
        for items in lists:
            if position >= len(items):
                continue
            document = items[position]
            key = document_key(document)
            if key not in merged:
                merged[key] = document
                continue
            kept = merged[key]
            better = {
                name: max(float(kept.metadata.get(name, 0.0) or 0.0), float(document.metadata[name] or 0.0))
                for name in ("score", "max_similarity")
                if name in document.metadata
            }
            if any(kept.metadata.get(name) != value for name, value in better.items()):
                # a copy: a retriever may hand out the same Document objects again
                merged[key] = Document(id=kept.id, page_content=kept.page_content, metadata={**kept.metadata, **better})
    return list(merged.values())


def embed_queries(embeddings: Embeddings, queries: Sequence[str]) -> list[list[float]]:
    """The queries' vectors in one forward pass when that is provably what ``embed_query`` gives
    (Keel's ONNX embeddings; HuggingFaceEmbeddings without separate query settings: their
    embed_query is embed_documents([q])[0]); otherwise one ``embed_query`` each."""
    from keel.models.onnx_embeddings import OnnxEmbeddings

    if isinstance(embeddings, OnnxEmbeddings):
        return embeddings.embed_documents(list(queries))
    try:  # here, not at the top: langchain_huggingface takes most of a second to import
        from langchain_huggingface import HuggingFaceEmbeddings
    except ImportError:  # pragma: no cover - a dependency of Keel
        HuggingFaceEmbeddings = ()  # type: ignore[assignment]
    if isinstance(embeddings, HuggingFaceEmbeddings) and not embeddings.query_encode_kwargs:
        return embeddings.embed_documents(list(queries))
    return [embeddings.embed_query(query) for query in queries]


class _VectorMemo:
    """Query vectors per (embeddings object, text), least recently used out first. The object
    itself is kept in the entry, so an id reused by another model never returns a stale vector."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, str], tuple[Embeddings, list[float]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embeddings: Embeddings, text: str) -> list[float] | None:
        with self._lock:
            entry = self._entries.get((id(embeddings), text))
            if entry is None or entry[0] is not embeddings:
                return None
            self._entries.move_to_end((id(embeddings), text))
            return entry[1]

    def put(self, embeddings: Embeddings, text: str, vector: list[float], size: int) -> None:
        if size <= 0:
            return
        with self._lock:
            self._entries[(id(embeddings), text)] = (embeddings, vector)
            self._entries.move_to_end((id(embeddings), text))
            while len(self._entries) > size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


QUERY_VECTORS = _VectorMemo()


def query_vectors(embeddings: Embeddings, queries: Sequence[str], memo_size: int | None = None) -> list[list[float]]:
    """The queries' vectors: from the memo, the rest embedded together in one batch."""
    size = _DEFAULTS.query_vector_memo_size if memo_size is None else memo_size
    known = {q: QUERY_VECTORS.get(embeddings, q) for q in dict.fromkeys(queries)}
    missing = [q for q, vector in known.items() if vector is None]
    if missing:
        for query, vector in zip(missing, embed_queries(embeddings, missing), strict=False):
            known[query] = list(vector)
            QUERY_VECTORS.put(embeddings, query, known[query], size)
    return [known[q] for q in queries]


def shared_query_embeddings(tasks: Sequence[tuple[BaseRetriever, str]], memo_size: int | None = None) -> list[dict]:
    """Per task, ``{"query_embedding": vector}`` when its retriever is Keel's: each distinct
    query is embedded once for all scopes (and all at once, or taken from the memo), not once
    per retriever."""
    extras: list[dict] = [{} for _ in tasks]
    by_model: dict[int, list[int]] = {}
    for i, (retriever, _) in enumerate(tasks):
        if isinstance(retriever, KeelParentRetriever):
            by_model.setdefault(id(retriever.store.embeddings), []).append(i)
    for members in by_model.values():
        embeddings = tasks[members[0]][0].store.embeddings
        vectors = query_vectors(embeddings, [tasks[i][1] for i in members], memo_size)
        for i, vector in zip(members, vectors, strict=False):
            extras[i] = {"query_embedding": vector}
    return extras


def search_parallel(
    tasks: Sequence[tuple[BaseRetriever, str]],
    config: RunnableConfig | None = None,
    max_workers: int | None = None,
    memo_size: int | None = None,
    embeddings: Embeddings | None = None,
) -> list[list[Document]]:
    """``retriever.invoke(query)`` for every task at once; results in task order. Keel's
    retrievers get their query vectors computed once beforehand (``shared_query_embeddings``),
    so the parallel part is the I/O: KNN searches and parent fetches. With ``embeddings``, a
    document found without a similarity gets one to its task's query (retrievers/scoring.py)."""
    if not tasks:
        return []
    extras = shared_query_embeddings(tasks, memo_size)
    if len(tasks) == 1:
        retriever, query = tasks[0]
        results = [retriever.invoke(query, config=config, **extras[0])]
    else:
        workers = max(1, _DEFAULTS.search_max_workers if max_workers is None else max_workers)
        with ThreadPoolExecutor(max_workers=min(workers, len(tasks)), thread_name_prefix="keel-search") as pool:
            futures = [
                pool.submit(retriever.invoke, query, config=config, **extra)
                for (retriever, query), extra in zip(tasks, extras, strict=False)
            ]
            results = [future.result() for future in futures]
    if embeddings is None:
        return results
    return with_similarities(results, [query for _, query in tasks],
                             lambda queries: query_vectors(embeddings, queries, memo_size),
                             semantic_for(embeddings).vectors)


def search_scopes(
    question: str,
    make_retriever: RetrieverMaker,
    cfg: Configuration,
    scopes: Sequence[list[str] | None],
    config: RunnableConfig | None = None,
    available: Sequence[int | None] | None = None,
    embeddings: Embeddings | None = None,
    subquestions: Sequence[str] | None = None,
) -> list[list[Document]]:
    """Search ``question`` (split into sub-questions: ``subquestions`` when given, else by the rules) in every scope (a list of doc ids, or None
    for all the user's documents), all at once; one merged list per scope. ``embeddings`` (the
    configured ones) score what a retriever returns without a similarity.

    Each (sub-question, scope) retriever gets its Hamilton share of K_max children
    (``available[i]`` caps scope i, e.g. its document's number of children). Page expansion is
    left to the caller, once, on the merged result."""
    if not scopes:
        return []
    subquestions = list(subquestions or split_subquestions(question, cfg.max_subquestions, cfg.subquestion_min_words)
                        or [question])
    pairs = [(scope_index, sub) for scope_index in range(len(scopes)) for sub in subquestions]
    caps = [available[i] if available is not None else None for i, _ in pairs]
    ks = apportion_children(len(pairs), cfg, caps)
    tasks, owners = [], []
    for (scope_index, sub), k in zip(pairs, ks, strict=False):
        if k <= 0:
            continue
        scoped = dataclasses.replace(
            cfg, retrieval_k_sizing="fixed", retrieval_k_children=k, page_expansion_pages=0
        )
        tasks.append((make_retriever(scoped, scopes[scope_index]), sub))
        owners.append(scope_index)
    results = search_parallel(tasks, config, cfg.search_max_workers, cfg.query_vector_memo_size, embeddings)
    per_scope: list[list[list[Document]]] = [[] for _ in scopes]
    for scope_index, documents in zip(owners, results, strict=False):
        per_scope[scope_index].append(documents)
    return [merge_round_robin(lists) for lists in per_scope]
