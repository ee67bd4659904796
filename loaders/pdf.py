"""PDF with pypdf: one text Document per page (page, total_pages), then the page's images as image
documents with their text read by OCR (a scanned page's only text), and the font size of every text
run (larger type marks the n-grams that get importance hints).

Damaged files are read as far as pypdf's tolerant mode goes: a broken page tree is rebuilt from the
page objects the file still holds, a page that cannot be read or whose text is undecodable (lost
font encodings) is reported in the loader's warnings and the other pages are kept. Only a file with
no readable page is rejected."""

from __future__ import annotations

import io
import logging
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.documents.base import Blob
from pypdf import PageObject, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from keel.core.settings.ingestion import IngestionSettings
from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError, PasswordRequiredError, UnsupportedDocumentError
from keel.loaders.image import embedded_image_document, is_decoration
from keel.loaders.picture_text import Picture, PictureText
from keel.splitters.ngram_hints import FONT_RUNS_KEY

logger = logging.getLogger(__name__)

PDF_EXTENSIONS = (".pdf",)
_HEADER = b"%PDF-"
_EOF_MARKER = b"%%EOF"
_HEADER_SEARCH_BYTES = 1024  # the PDF spec tolerates junk before the header
_EOF_SEARCH_BYTES = 4096  # ... and a little after the last %%EOF
_READ_ERRORS = (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError, RecursionError)
_UNDECODABLE = "\ufffd"  # what pypdf puts for a glyph whose font encoding it cannot find
# The inline-image operator "BI" as a token: only a page whose content may hold one needs its content
# parsed again to find images (a string that merely contains "BI" costs that parse, nothing else).
_INLINE_IMAGE_OPERATOR = re.compile(rb"(?:^|[\s\]\)>])BI[\s/]")


def _matrix_product(m: list[float], n: list[float]) -> list[float]:
    return [
        m[0] * n[0] + m[1] * n[2], m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2], m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4], m[4] * n[1] + m[5] * n[3] + n[5],
    ]


class FontRuns:
    """Collects ``[text, size_pt]`` runs from pypdf's text visitor, joining neighbours of one size.
    The size is the font size scaled by the text and transformation matrices (what is printed)."""

    def __init__(self):
        self.runs: list[list[Any]] = []

    def __call__(self, text: str, cm: list[float], tm: list[float], font_dict: Any, font_size: float) -> None:
        if not text or not text.strip() or not font_size:
            return
        m = _matrix_product(tm, cm)
        size = round(abs(float(font_size)) * math.sqrt(abs(m[0] * m[3] - m[1] * m[2])), 1)
        if size <= 0:
            return
        if self.runs and self.runs[-1][1] == size:
            self.runs[-1][0] += text
        else:
            self.runs.append([text, size])


class PdfLoader(KeelLoader):
    """Text per page, font runs, images. Encrypted files open with ``password`` (an empty
    owner-only password needs none); otherwise a ``PasswordRequiredError`` names the file.
    Truncated or corrupt files are rejected up front by ``open()`` rather than half-read."""

    def __init__(
        self,
        source: str | Path | Blob,
        *,
        password: str | None = None,
        user_id: str = "default",
        conversation_id: str | None = None,
        max_pages: int | None = None,
        cfg: IngestionSettings | None = None,
        extract_images: bool | None = None,
        font_runs: bool = True,
    ):
        super().__init__(source, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
        self.password = password
        self.max_pages = self.cfg.max_pages if max_pages is None else max_pages
        self.extract_images = self.cfg.extract_images if extract_images is None else extract_images
        self.font_runs = font_runs
        self._reader: PdfReader | None = None
        self._pages: Any = None

    def open(self) -> PdfReader:
        """Open and check the file: header, end marker, decryption, readable page count."""
        if self._reader is not None:
            return self._reader
        self._check_markers()
        try:
            reader = PdfReader(self.path if self.path is not None else io.BytesIO(self.read_bytes()), strict=False)
            if reader.is_encrypted:
                self._decrypt(reader)
            pages = self._page_list(reader)
            page_count = len(pages)
        except DocumentLoadError:
            raise
        except FileNotDecryptedError as exc:
            raise PasswordRequiredError(self.name, "encrypted PDF: a password is required") from exc
        except DependencyError as exc:
            raise UnsupportedDocumentError(self.name, f"encrypted PDF needs an extra package to decrypt: {exc}") from exc
        except _READ_ERRORS as exc:
            raise UnsupportedDocumentError(self.name, f"corrupt PDF: {exc}") from exc
        if page_count == 0:
            raise UnsupportedDocumentError(self.name, "corrupt PDF: no pages")
        if self.max_pages is not None and page_count > self.max_pages:
            raise UnsupportedDocumentError(self.name, f"too many pages: {page_count} (limit {self.max_pages})")
        self._reader, self._pages = reader, pages
        return reader

    def _page_list(self, reader: PdfReader) -> Any:
        """The document's pages; when the page tree is broken, the page objects the file still holds
        (in file order), reported."""
        try:
            len(reader.pages)
            return reader.pages
        except _READ_ERRORS as exc:
            recovered = _recover_pages(reader)
            if not recovered:
                raise
            self.warn(f"damaged page tree ({exc}): {len(recovered)} page(s) recovered from the file; "
                      "pages may be missing or out of order")
            return recovered

    def lazy_load(self) -> Iterator[Document]:
        self.open()
        pictures = PictureText(self)
        yield from pictures.in_reading_order(self._pages_and_pictures(pictures))

    def _pages_and_pictures(self, pictures: PictureText) -> Iterator[Document | Picture]:
        """Each page's text, then its pictures (kept as images and/or to read by OCR)."""
        pages = self._pages
        total = len(pages)
        image_index, readable = 0, 0
        for index in range(total):
            number = index + 1
            try:
                page = pages[index]
                runs = FontRuns() if self.font_runs else None
                text = page.extract_text(visitor_text=runs) or ""
            except Exception as exc:  # pypdf raises many types on damaged content streams
                self.warn(f"page {number} cannot be read, its text is lost: {type(exc).__name__}: {exc}")
                continue
            readable += 1
            text = self._decodable(text, number)
            meta = self.metadata(number, total)
            if runs is not None and runs.runs and text:
                meta[FONT_RUNS_KEY] = runs.runs
            yield Document(page_content=text, metadata=meta)
            if not (self.extract_images or pictures.enabled):
                continue
            scanned = not text.strip()  # its pictures are the page: kept, and read, whatever their size
            for data in self._page_images(page, number):
                image_index += 1
                if self.extract_images:
                    image = embedded_image_document(
                        self, data, page=number, total_pages=total, image_index=image_index,
                        page_content_only=scanned,
                    )
                    if image is not None:
                        yield image
                if pictures.enabled and (scanned or not is_decoration(self, data)):
                    yield Picture(data, number, total, image_index)
        if readable == 0:
            raise DocumentLoadError(self.name, f"corrupt PDF: none of its {total} page(s) can be read")

    def _decodable(self, text: str, number: int) -> str:
        """The page's text, or "" (reported) when most of it is undecodable glyphs."""
        visible = [char for char in text if not char.isspace()]
        if not visible:
            return text
        share = sum(char == _UNDECODABLE for char in visible) / len(visible)
        if share > self.cfg.max_undecodable_share:
            self.warn(f"page {number}: text undecodable ({share:.0%} of its characters; the file's font "
                      "encoding is damaged or missing), its text is lost")
            return ""
        return text

    def _page_images(self, page: Any, number: int) -> Iterator[bytes]:
        """Encoded bytes of each image on the page. A JPEG is kept exactly as embedded (no
        re-encoding, so it is the publisher's file); other images as pypdf decodes them.
        Images pypdf cannot decode are logged and skipped."""
        try:
            keys = _image_keys(page)
        except Exception as exc:
            logger.info("%s: images of page %d skipped: %s", self.name, number, exc)
            self.warn(f"page {number}: its pictures cannot be read, they are not kept: {type(exc).__name__}: {exc}")
            return
        for key in keys:
            try:
                yield self._embedded_jpeg(page, key) or page.images[key].data
            except Exception as exc:
                logger.info("%s: image %s on page %d skipped: %s", self.name, key, number, exc)
                self.warn(f"page {number}: picture {key} cannot be decoded, it is not kept: {type(exc).__name__}: {exc}")

    @staticmethod
    def _embedded_jpeg(page: Any, key: Any) -> bytes | None:
        if not isinstance(key, str) or not key.startswith("/"):
            return None  # inline images and images inside form XObjects: decoded by pypdf
        xobjects = (page.get("/Resources") or {}).get("/XObject") or {}
        if key not in xobjects:
            return None
        image = xobjects[key].get_object()
        filters = image.get("/Filter")
        last = filters[-1] if isinstance(filters, list) and filters else filters
        if last != "/DCTDecode":
            return None
        data = image.get_data()  # earlier filters undone; DCT data is the JPEG file itself
        return data if data[:3] == b"\xff\xd8\xff" else None

    def _check_markers(self) -> None:
        try:
            with self.blob.as_bytes_io() as handle:
                handle.seek(0, 2)
                size = handle.tell()
                handle.seek(0)
                head = handle.read(_HEADER_SEARCH_BYTES)
                handle.seek(max(0, size - _EOF_SEARCH_BYTES))
                tail = handle.read()
        except OSError as exc:
            raise DocumentLoadError(self.name, f"cannot read file: {exc.strerror or exc}") from exc
        if _HEADER not in head:
            raise UnsupportedDocumentError(self.name, "corrupt PDF: no %PDF- header (not a PDF file)")
        if _EOF_MARKER not in tail:
            raise UnsupportedDocumentError(self.name, "corrupt or truncated PDF: no %%EOF end marker")

    def _decrypt(self, reader: PdfReader) -> None:
        candidates = [self.password] if self.password is not None else [""]
        for candidate in candidates:
            if reader.decrypt(candidate):
                return
        if self.password is None:
            raise PasswordRequiredError(self.name, "encrypted PDF: a password is required")
        raise PasswordRequiredError(self.name, "encrypted PDF: the password is wrong")


def _image_keys(page: PageObject) -> list[Any]:
    """The names ``page.images`` knows the page's pictures by, without parsing the page's content
    stream a second time (text extraction parsed it once; pypdf's own listing would again, to find
    inline images): image XObjects of its resources, through nested forms, and pypdf's full listing
    only for a page whose content holds the inline-image operator."""
    contents = page.get_contents()
    if contents is not None and _INLINE_IMAGE_OPERATOR.search(contents.get_data()):
        return list(page.images.keys())
    return _xobject_image_keys(page, [], [])


def _xobject_image_keys(holder: Any, path: list[str], seen: list[Any]) -> list[Any]:
    """Image XObjects under ``holder``'s resources as pypdf names them: "/Im0" on the page,
    ["/Fm0", "/Im0"] inside a form; each form once, as pypdf lists them (a form may draw itself)."""
    from pypdf.generic import DictionaryObject, StreamObject

    reference = getattr(holder, "indirect_reference", None)
    if reference in seen:
        return []
    seen.append(reference)
    resources = holder.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    xobjects = resources.get("/XObject") if isinstance(resources, DictionaryObject) else None
    xobjects = xobjects.get_object() if xobjects is not None else None
    if not isinstance(xobjects, DictionaryObject):
        return []
    keys: list[Any] = []
    for name in xobjects:
        entry = xobjects[name]
        if not isinstance(entry, StreamObject):
            continue
        if entry.get("/Subtype", "") == "/Image":
            keys.append(name if not path else [*path, name])
        else:
            keys.extend(_xobject_image_keys(entry, [*path, name], seen))
    return keys


def _recover_pages(reader: PdfReader) -> list[PageObject]:
    """Page objects found by walking every object of the file (the page tree that lists them is
    damaged), in the order they appear in the file."""
    from pypdf.generic import DictionaryObject, IndirectObject

    found = []
    for generation, table in reader.xref.items():
        for number, offset in table.items():
            try:
                obj = reader.get_object(IndirectObject(number, generation, reader))
            except Exception:  # noqa: BLE001 - a damaged object is skipped, the others are tried
                continue
            if isinstance(obj, DictionaryObject) and obj.get("/Type") == "/Page":
                found.append((offset if isinstance(offset, int) else 0, number, generation, obj))
    pages = []
    for _, number, generation, obj in sorted(found, key=lambda item: (item[0], item[1])):
        page = PageObject(reader, IndirectObject(number, generation, reader))
        page.update(obj)
        pages.append(page)
    return pages
