"""Word (.docx) with python-docx: paragraphs, headings, tables (a row per line, cells joined by
" | "), headers and footers, and pictures as image documents (each followed by its text read by
OCR, loaders/picture_text.py), in reading order.

Word files carry no fixed pages; where Word recorded its rendered page breaks (or the author put
hard page breaks) the text is split into those pages, otherwise the document is page 1 of 1.
Headers come before the first page's text and footers after the last page's, once each.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError, UnsupportedDocumentError
from keel.loaders.image import embedded_image_document, is_decoration
from keel.loaders.ooxml import check_package
from keel.loaders.picture_text import Picture, PictureText
from keel.splitters.ngram_hints import FONT_RUNS_KEY

logger = logging.getLogger(__name__)

DOCX_EXTENSIONS = (".docx",)
_NS = {
    "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "wp": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
    "v": "urn:schemas-microsoft-com:vml",
}
_W_T, _W_BREAK, _W_RENDERED, _W_TYPE, _W_DRAWING, _W_PICT = (
    f"{{{_NS['w']}}}{name}" for name in ("t", "br", "lastRenderedPageBreak", "type", "drawing", "pict")
)
WORD_DEFAULT_FONT_PT = 10.0  # w:sz's default (20 half-points) when the styles set none


_COMPILED: dict[str, Any] = {}


def _xpath(element: Any, query: str) -> list:
    """XPath with our own prefixes (python-docx's ``xpath`` knows only its own)."""
    from lxml import etree

    if query not in _COMPILED:
        _COMPILED[query] = etree.XPath(query, namespaces=_NS)
    return _COMPILED[query](element)


def table_rows(table: Any) -> list[str]:
    """Each row as its cells' text joined by " | " (a merged cell counted once)."""
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            text = " ".join(cell.text.split())
            cells.append(text)
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


class DocxLoader(KeelLoader):
    """A .docx file; rejected with the reason when it is legacy, damaged or a zip bomb."""

    def open(self) -> Any:
        check_package(self, "Word", "word/document.xml", self.cfg)
        import docx

        try:
            with self.blob.as_bytes_io() as stream:
                return docx.Document(stream)
        except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors ...
            raise UnsupportedDocumentError(self.name, f"corrupt Word file: {type(exc).__name__}: {exc}") from exc

    def lazy_load(self) -> Iterator[Document]:
        document = self.open()
        picture_text = PictureText(self)
        yield from picture_text.in_reading_order(self._pages_and_pictures(document, picture_text))

    def _pages_and_pictures(self, document: Any, picture_text: PictureText) -> Iterator[Document | Picture]:
        """Each page's text, with its pictures where they stand (kept as images and/or to read by OCR)."""
        body = document.element.body
        rendered = bool(_xpath(body, ".//w:lastRenderedPageBreak"))
        total = 1 + sum(1 for p in _xpath(body, "./w:p") if self._break_position(p, rendered))
        if total > self.cfg.max_pages:
            raise UnsupportedDocumentError(self.name, f"too many pages: {total} (limit {self.cfg.max_pages})")
        sizes = _FontSizes(document)
        headers, footers = self._headers_and_footers(document)
        page, lines, runs, image_index = 1, list(headers), [], 0

        yielded_text = False

        def flush(final: bool = False) -> Iterator[Document]:
            nonlocal yielded_text
            text = "\n".join(line for line in (*lines, *(footers if final else ())) if line.strip())
            if text.strip() or (final and not yielded_text):  # a text page even when empty: it had none
                yielded_text = True
                meta = self.metadata(page, total)
                if runs:
                    meta[FONT_RUNS_KEY] = list(runs)
                yield Document(page_content=text, metadata=meta)
            lines.clear()
            runs.clear()

        try:
            for block in document.iter_inner_content():
                element = block._element
                if element.tag.endswith("}tbl"):
                    lines.extend(table_rows(block))
                    continue
                position = self._break_position(element, rendered)
                if position == "before" and page < total:
                    yield from flush()
                    page += 1
                if block.text.strip():
                    lines.append(block.text)
                    runs.extend([run.text, sizes.of(block, run)] for run in block.runs if run.text.strip())
                wanted = self.cfg.extract_images or picture_text.enabled
                pictures = self._pictures(document, element) if wanted else []
                if pictures:
                    yield from flush()  # the text before the picture comes first (reading order)
                for data, alt_text in pictures:
                    image_index += 1
                    image = embedded_image_document(
                        self, data, page=page, total_pages=total, image_index=image_index, alt_text=alt_text
                    )
                    if image is not None:
                        yield image
                    if picture_text.enabled and not is_decoration(self, data):
                        yield Picture(data, page, total, image_index)
                if position == "after" and page < total:
                    yield from flush()
                    page += 1
            yield from flush(final=True)
        except DocumentLoadError:
            raise
        except Exception as exc:
            raise DocumentLoadError(self.name, f"corrupt Word file: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _break_position(paragraph: Any, rendered: bool) -> str | None:
        """Returns "before" when the paragraph's first page break comes before its text (it starts the
        next page), "after" when it comes after some text (it ends its page), else None."""
        seen_text = False
        for element in paragraph.iter(_W_T, _W_BREAK, _W_RENDERED, _W_DRAWING, _W_PICT):
            if element.tag in (_W_DRAWING, _W_PICT):
                seen_text = True  # a picture is content of the page it is on
            elif element.tag == _W_T:
                seen_text = seen_text or bool((element.text or "").strip())
            elif (element.tag == _W_RENDERED) if rendered else (element.get(_W_TYPE) == "page"):
                return "after" if seen_text else "before"
        return None

    @staticmethod
    def _pictures(document: Any, element: Any) -> list[tuple[bytes, str]]:
        """(image bytes, alt text) of the pictures in a paragraph, in order."""
        parts = document.part.related_parts
        found = []
        for drawing in _xpath(element, ".//w:drawing | .//w:pict"):
            ids = _xpath(drawing, ".//a:blip/@r:embed | .//v:imagedata/@r:id")
            described = _xpath(drawing, ".//wp:docPr")
            alt = ""
            if described:
                alt = described[0].get("descr") or described[0].get("title") or ""
            for rel_id in ids:
                part = parts.get(rel_id)
                if part is not None and hasattr(part, "blob"):
                    found.append((part.blob, alt))
        return found

    @staticmethod
    def _headers_and_footers(document: Any) -> tuple[list[str], list[str]]:
        headers: list[str] = []
        footers: list[str] = []
        for section in document.sections:
            for attribute, target in (
                ("first_page_header", headers), ("header", headers), ("even_page_header", headers),
                ("first_page_footer", footers), ("footer", footers), ("even_page_footer", footers),
            ):
                part = getattr(section, attribute)
                if part.is_linked_to_previous:
                    continue
                lines = [p.text for p in part.paragraphs if p.text.strip()]
                for table in part.tables:
                    lines.extend(table_rows(table))
                text = "\n".join(lines)
                if text.strip() and text not in target:
                    target.append(text)
        return headers, footers


class _FontSizes:
    """A run's font size in points: its own, else its paragraph style's (inherited), else the
    document default."""

    def __init__(self, document: Any):
        self.default = WORD_DEFAULT_FONT_PT
        half_points = _xpath(document.styles.element, "w:docDefaults/w:rPrDefault/w:rPr/w:sz/@w:val")
        if half_points:
            try:
                self.default = int(half_points[0]) / 2
            except ValueError:
                pass
        self._styles: dict[int, float] = {}

    def of(self, paragraph: Any, run: Any) -> float:
        if run.font.size is not None:
            return run.font.size.pt
        if run.style is not None and run.style.font.size is not None:
            return run.style.font.size.pt
        return self._style_size(paragraph.style)

    def _style_size(self, style: Any) -> float:
        key = id(style)
        if key not in self._styles:
            size, current = None, style
            while current is not None and size is None:
                size = current.font.size.pt if current.font.size is not None else None
                current = current.base_style
            self._styles[key] = size or self.default
        return self._styles[key]
