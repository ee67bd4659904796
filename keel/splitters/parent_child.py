"""Parent-child chunking: big parents for the answer's context, small children for
search. Each page is tokenized once (streamed for long pages); parents are packed from its word
units and children from the units of their parent, so parents never cross pages and children never
cross parents. Image documents become one parent with one child (``splitters.mixed_content``).
Children with important n-grams get a hinted embedding text (``splitters.ngram_hints``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from keel.core.settings import IngestionSettings, SplitterSettings
from keel.splitters.adaptive_token_boundary import AdaptiveTokenBoundarySplitter
from keel.splitters.mixed_content import IMAGE_DATA_KEY, image_chunk, is_image
from keel.splitters.ngram_hints import FONT_RUNS_KEY, ImportantNgram, NgramImportance
from keel.stores.chunk_store import EMBEDDING_TEXT_KEY

USER_KEY_HEX_CHARS = 16
# Page metadata that describes the page as a whole and is not copied onto its chunks.
PAGE_ONLY_KEYS = (FONT_RUNS_KEY,)


def user_key(user_id: str) -> str:
    """A fixed-width, character-safe stand-in for a user id inside chunk ids and keys."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:USER_KEY_HEX_CHARS]


def parent_chunk_id(user_id: str, doc_id: str, parent_index: int) -> str:
    """The id of a document's parent chunk: the user's key, the document and its position."""
    return f"{user_key(user_id)}:{doc_id}:{parent_index}"


def child_chunk_id(parent_id: str, child_index: int) -> str:
    """The id of a parent's child chunk: the parent's id and the child's position."""
    return f"{parent_id}:{child_index}"


@dataclass
class ParentWithChildren:
    """A parent chunk (what the model reads) with its children (what the search matches)."""
    parent: Document
    children: list[Document] = field(default_factory=list)


class ParentChildSplitter:
    """Splits page Documents (with loader metadata: user_id, doc_id, page, ...) into parents of
    ``parent_chunk_tokens`` and children of ``child_chunk_tokens`` with ``child_chunk_overlap``.

    Ids are deterministic: ``parent_id = user_key:doc_id:parent_index`` and
    ``child_id = parent_id:child_index``, so re-ingesting a file produces the same keys.
    ``chunk_index`` counts parents (on parents) and children (on children) across the document.
    With ``importance`` (an ``NgramImportance``), ``split_documents`` finds the document's important
    n-grams first and gives children that contain them an ``embedding_text`` with hints.
    """

    def __init__(
        self,
        parent_chunk_tokens: int | None = None,
        child_chunk_tokens: int | None = None,
        child_chunk_overlap: int | None = None,
        tokenizer: Any = None,
        importance: NgramImportance | None = None,
        *,
        cfg: IngestionSettings | None = None,
    ):
        """Sizes left as None, and the splitter's window and tail settings, come from ``cfg``
        (default ``IngestionSettings()``): one source of truth for every limit."""
        cfg = cfg or IngestionSettings()
        parent_chunk_tokens = cfg.parent_chunk_tokens if parent_chunk_tokens is None else parent_chunk_tokens
        child_chunk_tokens = cfg.child_chunk_tokens if child_chunk_tokens is None else child_chunk_tokens
        child_chunk_overlap = cfg.child_chunk_overlap if child_chunk_overlap is None else child_chunk_overlap
        if child_chunk_tokens > parent_chunk_tokens:
            raise ValueError(
                f"child_chunk_tokens ({child_chunk_tokens}) must not exceed parent_chunk_tokens ({parent_chunk_tokens})"
            )
        self.parent_chunk_tokens = parent_chunk_tokens
        self.child_chunk_tokens = child_chunk_tokens
        self.child_chunk_overlap = child_chunk_overlap
        self.importance = importance
        # the child splitter validates sizes and owns the tokenizer; its units are cut at the child size
        self.token_splitter = AdaptiveTokenBoundarySplitter(
            child_chunk_tokens, child_chunk_overlap, tokenizer, tokenize_window_chars=cfg.splitter_window_chars,
            windows_per_block=cfg.splitter_windows_per_block, min_tail_fraction=cfg.splitter_min_tail_fraction,
        )

    @classmethod
    def from_config(cls, cfg: SplitterSettings, tokenizer: Any = None) -> ParentChildSplitter:
        if tokenizer is None:  # imported only then: a splitter given its tokenizer needs no model client
            from keel.models.embeddings import get_embedding_tokenizer

            tokenizer = get_embedding_tokenizer(cfg)
        importance = NgramImportance.from_config(cfg) if cfg.ngram_hints else None
        return cls(tokenizer=tokenizer, importance=importance, cfg=cfg)

    def lazy_split(
        self, pages: Iterable[Document], important: Sequence[ImportantNgram] = ()
    ) -> Iterator[ParentWithChildren]:
        """Parents (each with its children) in reading order, page by page; text and images."""
        parent_index = 0
        child_index = 0
        for page in pages:
            _check_page(page)
            items = self._image_page(page, parent_index, child_index) if is_image(page) else self._split_page(
                page, parent_index, child_index, important
            )
            for item in items:
                parent_index += 1
                child_index += len(item.children)
                yield item

    def split_documents(self, pages: Iterable[Document]) -> tuple[list[Document], list[Document]]:
        """All parents and all children of one document's ``pages``."""
        pages = list(pages)
        important = self.importance.find(pages) if self.importance else ()
        parents: list[Document] = []
        children: list[Document] = []
        for item in self.lazy_split(pages, important):
            parents.append(item.parent)
            children.extend(item.children)
        return parents, children

    def _split_page(
        self, page: Document, parent_index: int, child_index: int, important: Sequence[ImportantNgram]
    ) -> Iterator[ParentWithChildren]:
        meta = {key: value for key, value in page.metadata.items() if key not in PAGE_ONLY_KEYS}
        text = page.page_content
        parents = self.token_splitter.lazy_split_units(text, self.parent_chunk_tokens, 0, self.child_chunk_tokens)
        for units, first, stop in parents:
            parent_id = parent_chunk_id(meta["user_id"], meta["doc_id"], parent_index)
            start, end = units.span(first, stop)
            parent = Document(
                id=parent_id,
                page_content=text[start:end],
                metadata={**meta, "chunk_index": parent_index, "start_index": start},
            )
            item = ParentWithChildren(parent)
            ranges = self.token_splitter.pack(units, first, stop, self.child_chunk_tokens, self.child_chunk_overlap)
            for local, (c_first, c_stop) in enumerate(ranges):
                c_start, c_end = units.span(c_first, c_stop)
                child_text = text[c_start:c_end]
                child_meta = {**meta, "chunk_index": child_index + local, "start_index": c_start, "parent_id": parent_id}
                hinted = self.importance.embedding_text(child_text, important) if self.importance and important else None
                if hinted:
                    child_meta[EMBEDDING_TEXT_KEY] = hinted
                item.children.append(Document(id=child_chunk_id(parent_id, local), page_content=child_text, metadata=child_meta))
            yield item
            parent_index += 1
            child_index += len(ranges)

    @staticmethod
    def _image_page(page: Document, parent_index: int, child_index: int) -> Iterator[ParentWithChildren]:
        chunk = image_chunk(page)
        meta = {key: value for key, value in chunk.metadata.items() if key not in PAGE_ONLY_KEYS}
        parent_id = parent_chunk_id(meta["user_id"], meta["doc_id"], parent_index)
        parent = Document(
            id=parent_id, page_content=chunk.page_content, metadata={**meta, "chunk_index": parent_index, "start_index": 0}
        )
        child_meta = {key: value for key, value in meta.items() if key != IMAGE_DATA_KEY}  # the parent keeps the data
        child = Document(
            id=child_chunk_id(parent_id, 0),
            page_content=chunk.page_content,
            metadata={**child_meta, "chunk_index": child_index, "start_index": 0, "parent_id": parent_id},
        )
        yield ParentWithChildren(parent, [child])


def _check_page(page: Document) -> None:
    for key in ("user_id", "doc_id"):
        if not page.metadata.get(key):
            raise ValueError(f"page of {page.metadata.get('source', '?')!r} has no {key!r} metadata (use a Keel loader)")
