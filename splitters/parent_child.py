"""Parent-child chunking (seed 003): big parents for the answer's context, small children for
search. Each page is tokenized once; parents are packed from its word units and children from
the units of their parent, so parents never cross pages and children never cross parents."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from graph.configuration import Configuration
from splitters.token_boundary import TokenBoundarySplitter, pack_units

USER_KEY_HEX_CHARS = 16


def user_key(user_id: str) -> str:
    """A fixed-width, character-safe stand-in for a user id inside chunk ids and keys."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:USER_KEY_HEX_CHARS]


def parent_chunk_id(user_id: str, doc_id: str, parent_index: int) -> str:
    return f"{user_key(user_id)}:{doc_id}:{parent_index}"


def child_chunk_id(parent_id: str, child_index: int) -> str:
    return f"{parent_id}:{child_index}"


@dataclass
class ParentWithChildren:
    parent: Document
    children: list[Document] = field(default_factory=list)


class ParentChildSplitter:
    """Splits page Documents (with loader metadata: user_id, doc_id, page, ...) into parents of
    ``parent_chunk_tokens`` and children of ``child_chunk_tokens`` with ``child_chunk_overlap``.

    Ids are deterministic: ``parent_id = user_key:doc_id:parent_index`` and
    ``child_id = parent_id:child_index``, so re-ingesting a file produces the same keys.
    ``chunk_index`` counts parents (on parents) and children (on children) across the document.
    """

    def __init__(
        self,
        parent_chunk_tokens: int = 2000,
        child_chunk_tokens: int = 150,
        child_chunk_overlap: int = 20,
        tokenizer: Any = None,
    ):
        if child_chunk_tokens > parent_chunk_tokens:
            raise ValueError(
                f"child_chunk_tokens ({child_chunk_tokens}) must not exceed parent_chunk_tokens ({parent_chunk_tokens})"
            )
        self.parent_chunk_tokens = parent_chunk_tokens
        self.child_chunk_tokens = child_chunk_tokens
        self.child_chunk_overlap = child_chunk_overlap
        # the child splitter validates sizes and owns the tokenizer; its units are cut at the child size
        self.token_splitter = TokenBoundarySplitter(child_chunk_tokens, child_chunk_overlap, tokenizer)

    @classmethod
    def from_config(cls, cfg: Configuration, tokenizer: Any = None) -> "ParentChildSplitter":
        if tokenizer is None:
            from models.embeddings import get_embedding_tokenizer

            tokenizer = get_embedding_tokenizer(cfg)
        return cls(cfg.parent_chunk_tokens, cfg.child_chunk_tokens, cfg.child_chunk_overlap, tokenizer)

    def lazy_split(self, pages: Iterable[Document]) -> Iterator[ParentWithChildren]:
        """Parents (each with its children) in reading order, page by page."""
        parent_index = 0
        child_index = 0
        for page in pages:
            for item in self._split_page(page, parent_index, child_index):
                parent_index += 1
                child_index += len(item.children)
                yield item

    def split_documents(self, pages: Iterable[Document]) -> tuple[list[Document], list[Document]]:
        """All parents and all children of ``pages``."""
        parents: list[Document] = []
        children: list[Document] = []
        for item in self.lazy_split(pages):
            parents.append(item.parent)
            children.extend(item.children)
        return parents, children

    def _split_page(self, page: Document, parent_index: int, child_index: int) -> Iterator[ParentWithChildren]:
        meta = page.metadata
        for key in ("user_id", "doc_id"):
            if not meta.get(key):
                raise ValueError(f"page of {meta.get('source', '?')!r} has no {key!r} metadata (use a Keel loader)")
        text = page.page_content
        units = self.token_splitter.word_units(text, self.child_chunk_tokens)
        for first, stop in pack_units(units, 0, len(units), self.parent_chunk_tokens, 0):
            parent_id = parent_chunk_id(meta["user_id"], meta["doc_id"], parent_index)
            start, end = units.span(first, stop)
            parent = Document(
                id=parent_id,
                page_content=text[start:end],
                metadata={**meta, "chunk_index": parent_index, "start_index": start},
            )
            item = ParentWithChildren(parent)
            ranges = pack_units(units, first, stop, self.child_chunk_tokens, self.child_chunk_overlap)
            for local, (c_first, c_stop) in enumerate(ranges):
                c_start, c_end = units.span(c_first, c_stop)
                item.children.append(
                    Document(
                        id=child_chunk_id(parent_id, local),
                        page_content=text[c_start:c_end],
                        metadata={
                            **meta,
                            "chunk_index": child_index + local,
                            "start_index": c_start,
                            "parent_id": parent_id,
                        },
                    )
                )
            yield item
            parent_index += 1
            child_index += len(ranges)
