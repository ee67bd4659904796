"""Mixed content (the multi-modal splitter): text and image documents in reading order.

An image document (``multimodal_type == "image"``, its base64 data as ``page_content``, width,
height and colour channels in metadata) is never cut: it becomes one chunk of its own whose text
is a short description (what a text-only chat model and a text embedding can use) and whose
metadata keeps the image itself under ``image_base64``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.documents import Document

from keel.splitters.adaptive_token_boundary import AdaptiveTokenBoundarySplitter

IMAGE_TYPE = "image"
IMAGE_DATA_KEY = "image_base64"


def is_image(document: Document) -> bool:
    """Whether the document stands for a picture rather than text."""
    return document.metadata.get("multimodal_type") == IMAGE_TYPE


def image_description(meta: dict[str, Any]) -> str:
    """``[Image 2 on page 3 of report.pdf: 640x480 pixels, RGB (3 channels) - alt text]``."""
    where = f"page {meta['page']} of " if meta.get("total_pages", 1) > 1 and meta.get("page") else ""
    number = f" {meta['image_index']}" if meta.get("image_index") else ""
    size = f"{meta.get('width', '?')}x{meta.get('height', '?')} pixels"
    colour = f", {meta['colour_mode']} ({meta.get('channels', '?')} channels)" if meta.get("colour_mode") else ""
    alt = f" - {' '.join(str(meta['alt_text']).split())}" if meta.get("alt_text") else ""
    return f"[Image{number} on {where}{meta.get('source', 'the document')}: {size}{colour}{alt}]"


def image_chunk(document: Document) -> Document:
    """The image as one chunk: description as text, the data under ``image_base64``."""
    meta = {**document.metadata, IMAGE_DATA_KEY: document.page_content}
    return Document(page_content=image_description(meta), metadata=meta)


class MixedContentSplitter:
    """Splits a stream of text and image documents in order: text with the adaptive token
    boundary splitter, each image kept whole as its own chunk with its metadata."""

    def __init__(self, text_splitter: AdaptiveTokenBoundarySplitter | None = None):
        self.text_splitter = text_splitter or AdaptiveTokenBoundarySplitter()

    def lazy_split_documents(self, documents: Iterable[Document]) -> Iterator[Document]:
        for document in documents:
            if is_image(document):
                yield image_chunk(document)
                continue
            text = document.page_content
            for start, end in self.text_splitter.lazy_split_spans(text):
                yield Document(page_content=text[start:end], metadata={**document.metadata, "start_index": start})

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        return list(self.lazy_split_documents(documents))
