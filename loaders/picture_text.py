"""The text of a document's pictures as text documents of their page, read by OCR.

Each picture read gives a text ``Document`` of the picture's page with ``ocr: True``,
``ocr_confidence`` (Tesseract's mean word confidence, 0-100) and ``image_index``, so an answer can
cite the page and a reader knows the words came from a picture. What could not be read is said in
the loader's warnings (and so in the ingest report): OCR not installed, a picture too large or too
slow, more pictures than ``cfg.ocr_max_pages``, a page whose OCR confidence is low.

A loader yields its pages and its pictures (``Picture``) in reading order through
``PictureText.in_reading_order``, which reads the pictures in batches of ``cfg.ocr_batch_pictures``
with one Tesseract process each and gives back the documents in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from langchain_core.documents import Document

from keel.loaders import ocr
from keel.loaders.base import KeelLoader
from keel.loaders.ocr import OcrFailedError, OcrResult, OcrUnavailableError

OCR_KEY = "ocr"
OCR_CONFIDENCE_KEY = "ocr_confidence"


@dataclass(frozen=True)
class Picture:
    """A picture to read by OCR, in its place among the document's pages."""

    data: bytes
    page: int
    total_pages: int
    image_index: int


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

    def in_reading_order(self, parts: Iterable[Document | Picture]) -> Iterator[Document]:
        """The documents of ``parts`` with each picture replaced by its text (or dropped), in order.
        Pages after a waiting picture are held back until its batch is read: at most
        ``cfg.ocr_batch_pictures`` pictures and as many other documents."""
        held: list[Document | Picture] = []
        pictures = 0
        for part in parts:
            if isinstance(part, Picture):
                if not self._counted(part):
                    continue
                pictures += 1
            elif not held:
                yield part
                continue
            held.append(part)
            if max(pictures, len(held) - pictures) >= self.cfg.ocr_batch_pictures:
                yield from self._read(held)
                held, pictures = [], 0
        yield from self._read(held)
        self.finish()

    def document(self, data: bytes, *, page: int, total_pages: int, image_index: int) -> Document | None:
        """One picture's text as a document of ``page``, or None (reported when it is a loss)."""
        picture = Picture(data, page, total_pages, image_index)
        if not self._counted(picture):
            return None
        return next(iter(self._read([picture])), None)

    def finish(self) -> None:
        """Report the pictures left unread by the limit (called once the document is read)."""
        if self.skipped:
            self.loader.warn(
                f"OCR read the first {self.cfg.ocr_max_pages} pictures only (ocr_max_pages); "
                f"{self.skipped} more were not read"
            )
            self.skipped = 0

    def _counted(self, picture: Picture) -> bool:
        """Whether the picture is to be read: OCR on and available, and the document under its limit."""
        if not self.enabled:
            return False
        reason = ocr.ocr_available(self.cfg)
        if reason:
            self._unavailable(reason)
            return False
        if self.read >= self.cfg.ocr_max_pages:
            self.skipped += 1
            return False
        self.read += 1
        return True

    def _unavailable(self, reason: object) -> None:
        self.unavailable = True
        self.loader.warn(f"pictures not read: {reason}")

    def _read(self, held: list[Document | Picture]) -> Iterator[Document]:
        pictures = [part for part in held if isinstance(part, Picture)]
        try:
            results = iter(ocr.ocr_images([picture.data for picture in pictures], self.cfg)) if pictures else iter(())
        except OcrUnavailableError as exc:
            self._unavailable(exc)
            results = iter([exc] * len(pictures))
        for part in held:
            if not isinstance(part, Picture):
                yield part
                continue
            document = self._document(part, next(results))
            if document is not None:
                yield document

    def _document(self, picture: Picture, result: OcrResult | Exception) -> Document | None:
        if isinstance(result, OcrUnavailableError):
            return None  # said once, in _unavailable
        if isinstance(result, OcrFailedError):
            self.loader.warn(f"page {picture.page}: picture {picture.image_index} not read by OCR: {result}")
            return None
        if not result.text.strip():
            return None  # a photo or a drawing: nothing to read, nothing lost
        if result.confidence < self.cfg.ocr_min_confidence:
            self.loader.warn(
                f"page {picture.page}: low OCR confidence {result.confidence:g} (below {self.cfg.ocr_min_confidence:g}) "
                f"on picture {picture.image_index}: its text may be wrong"
            )
        meta = self.loader.metadata(
            picture.page, picture.total_pages, "text", image_index=picture.image_index,
            **{OCR_KEY: True, OCR_CONFIDENCE_KEY: result.confidence},
        )
        return Document(page_content=result.text, metadata=meta)
