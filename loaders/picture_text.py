"""The text of a document's pictures as text documents of their page, read by OCR.

Each picture read gives a text ``Document`` of the picture's page with ``ocr: True``,
``ocr_confidence`` (Tesseract's mean word confidence, 0-100) and ``image_index``, so an answer can
cite the page and a reader knows the words came from a picture. What could not be read is said in
the loader's warnings (and so in the ingest report): OCR not installed, a picture too large or too
slow, more pictures than ``cfg.ocr_max_pages``, a page whose OCR confidence is low.
"""

from __future__ import annotations

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.ocr import OcrFailedError, OcrUnavailableError, ocr_image

OCR_KEY = "ocr"
OCR_CONFIDENCE_KEY = "ocr_confidence"


class PictureText:
    """OCR of one document's pictures, counted against ``cfg.ocr_max_pages``."""

    def __init__(self, loader: KeelLoader):
        self.loader = loader
        self.cfg = loader.cfg
        self.read = 0
        self.skipped = 0
        self.unavailable = False

    @property
    def enabled(self) -> bool:
        return self.cfg.ocr_enabled and not self.unavailable

    def document(self, data: bytes, *, page: int, total_pages: int, image_index: int) -> Document | None:
        """The picture's text as a document of ``page``, or None (reported when it is a loss)."""
        if not self.enabled:
            return None
        if self.read >= self.cfg.ocr_max_pages:
            self.skipped += 1
            return None
        self.read += 1
        try:
            result = ocr_image(data, self.cfg)
        except OcrUnavailableError as exc:
            self.unavailable = True
            self.loader.warn(f"pictures not read: {exc}")
            return None
        except OcrFailedError as exc:
            self.loader.warn(f"page {page}: picture {image_index} not read by OCR: {exc}")
            return None
        if not result.text.strip():
            return None  # a photo or a drawing: nothing to read, nothing lost
        if result.confidence < self.cfg.ocr_min_confidence:
            self.loader.warn(
                f"page {page}: low OCR confidence {result.confidence:g} (below {self.cfg.ocr_min_confidence:g}) "
                f"on picture {image_index}: its text may be wrong"
            )
        meta = self.loader.metadata(
            page, total_pages, "text", image_index=image_index,
            **{OCR_KEY: True, OCR_CONFIDENCE_KEY: result.confidence},
        )
        return Document(page_content=result.text, metadata=meta)

    def finish(self) -> None:
        """Report the pictures left unread by the limit (called once the document is read)."""
        if self.skipped:
            self.loader.warn(
                f"OCR read the first {self.cfg.ocr_max_pages} pictures only (ocr_max_pages); "
                f"{self.skipped} more were not read"
            )
