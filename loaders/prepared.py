"""A document loaded and split, ready to embed and store: the part of ingestion that needs no model
and no Redis, so it can run ahead of the embedder in another process.

``prepare_document`` never raises for a bad file: what went wrong is the ``error`` of the result (the
loader's reason, or the exception and its traceback for the log), so it crosses a process boundary
as plain data and the pipeline reports it by file name like any other failure.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from keel.loaders.errors import DocumentLoadError
from keel.splitters.parent_child import ParentChildSplitter
from keel.stores.chunk_store import EMBEDDING_TEXT_KEY

NO_TEXT_REASON = "no extractable text (empty, or scanned images without a text layer)"
PICTURES_ONLY_WARNING = (
    "no text found, not even by OCR: stored as {images} picture(s) only; questions about it cannot be "
    "answered from text"
)


@dataclass
class PreparedDocument:
    """One file's parents and children (children ordered by length, so each embedding batch pads
    little), what it lost (``warnings``), or why it was refused (``error``)."""

    source: str
    parents: list[Document] = field(default_factory=list)
    children: list[Document] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    failure_traceback: str | None = None  # an unexpected exception: logged where the report is made
    position: int = 0  # the file's index in the ingest call's list: its report is put back in that order

    @property
    def ok(self) -> bool:
        return self.error is None


def prepare_document(make_loader: Callable[[], BaseLoader], source: str, splitter: ParentChildSplitter) -> PreparedDocument:
    """Load and split one file; its failure becomes the result's ``error``."""
    try:
        loader = make_loader()
        prepared = split_pages(loader.lazy_load(), splitter, source)
        prepared.warnings[:0] = list(getattr(loader, "warnings", []))
        return prepared
    except DocumentLoadError as exc:
        return PreparedDocument(source, error=exc.reason)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        return PreparedDocument(source, error=f"{type(exc).__name__}: {exc}", failure_traceback=traceback.format_exc())


def split_pages(pages: Iterable[Document], splitter: ParentChildSplitter, source: str) -> PreparedDocument:
    """Split one document's pages (text and images).

    A document without text, not even read by OCR from its pictures, is kept as its pictures (as
    an image file is), with a warning that a text model cannot answer from it; one with neither text
    nor pictures is rejected (``DocumentLoadError``)."""
    pages = list(pages)
    parents, children = splitter.split_documents(pages)
    if not children:
        raise DocumentLoadError(Path(source).name, NO_TEXT_REASON)
    warnings = []
    if not any(child.metadata.get("multimodal_type", "text") == "text" for child in children):
        images = sum(1 for page in pages if page.metadata.get("multimodal_type") == "image")
        if not images:
            raise DocumentLoadError(Path(source).name, NO_TEXT_REASON)
        is_image_file = all(page.metadata.get("multimodal_type") == "image" for page in pages)
        if not is_image_file:
            warnings.append(PICTURES_ONLY_WARNING.format(images=images))
    # Similar lengths side by side: each embedding batch pads less (the order is not stored).
    by_length = sorted(children, key=lambda child: len(child.metadata.get(EMBEDDING_TEXT_KEY) or child.page_content))
    return PreparedDocument(source, parents, by_length, warnings)
