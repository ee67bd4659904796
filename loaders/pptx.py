"""PowerPoint (.pptx) with python-pptx: per slide (the slide number is the page) its text in
reading order (top to bottom, left to right), tables (a row per line), the speaker notes, then its
pictures as image documents, each followed by its text read by OCR (loaders/picture_text.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import UnsupportedDocumentError
from keel.loaders.image import embedded_image_document, is_decoration
from keel.loaders.ooxml import check_package
from keel.loaders.picture_text import Picture, PictureText
from keel.splitters.ngram_hints import FONT_RUNS_KEY

PPTX_EXTENSIONS = (".pptx",)
# PowerPoint's default sizes for text whose size is inherited from the master (not in the run).
TITLE_DEFAULT_PT = 44.0
SUBTITLE_DEFAULT_PT = 32.0
BODY_DEFAULT_PT = 18.0
NOTES_PREFIX = "Speaker notes:"


def _reading_order(shapes: Any) -> list[Any]:
    return sorted(shapes, key=lambda shape: ((shape.top or 0), (shape.left or 0)))


def _default_size(shape: Any) -> float:
    """The size PowerPoint gives a placeholder's text when the run sets none."""
    if not shape.is_placeholder:
        return BODY_DEFAULT_PT
    from pptx.enum.shapes import PP_PLACEHOLDER

    kind = shape.placeholder_format.type
    if kind in (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE):
        return TITLE_DEFAULT_PT
    return SUBTITLE_DEFAULT_PT if kind == PP_PLACEHOLDER.SUBTITLE else BODY_DEFAULT_PT


class SlideContent:
    """What one slide holds: text lines, font runs, pictures (bytes, alt text)."""

    def __init__(self):
        self.lines: list[str] = []
        self.runs: list[list[Any]] = []
        self.pictures: list[tuple[bytes, str]] = []

    def add_shapes(self, shapes: Any) -> None:
        from pptx.enum.shapes import MSO_SHAPE_TYPE

        for shape in _reading_order(shapes):
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                self.add_shapes(shape.shapes)
            elif _has_image(shape):
                self.pictures.append((shape.image.blob, shape._element.xpath("string(.//p:cNvPr/@descr)") or ""))
            if getattr(shape, "has_table", False) and shape.has_table:
                self._add_table(shape.table)
            if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                self._add_text_frame(shape.text_frame, _default_size(shape))

    def _add_text_frame(self, frame: Any, default_pt: float) -> None:
        for paragraph in frame.paragraphs:
            text = "".join(run.text for run in paragraph.runs) or paragraph.text
            if not text.strip():
                continue
            self.lines.append(text)
            for run in paragraph.runs:
                if run.text.strip():
                    size = run.font.size.pt if run.font.size is not None else default_pt
                    self.runs.append([run.text, size])

    def _add_table(self, table: Any) -> None:
        for row in table.rows:
            cells = [" ".join(cell.text.split()) for cell in row.cells if not cell.is_spanned]
            if any(cells):
                self.lines.append(" | ".join(cells))


def _has_image(shape: Any) -> bool:
    """Pictures, picture placeholders and picture-filled shapes whose image part is present."""
    try:
        return bool(shape.image.blob)
    except Exception:  # no image attribute, or a dangling / linked image reference
        return False


class PptxLoader(KeelLoader):
    """A .pptx file; rejected with the reason when it is legacy, damaged or a zip bomb."""

    def open(self) -> Any:
        check_package(self, "PowerPoint", "ppt/presentation.xml", self.cfg)
        from pptx import Presentation

        try:
            with self.blob.as_bytes_io() as stream:
                presentation = Presentation(stream)
            count = len(presentation.slides)
        except Exception as exc:  # python-pptx raises KeyError, ValueError, lxml errors ...
            raise UnsupportedDocumentError(self.name, f"corrupt PowerPoint file: {type(exc).__name__}: {exc}") from exc
        if count > self.cfg.max_pages:
            raise UnsupportedDocumentError(self.name, f"too many slides: {count} (limit {self.cfg.max_pages})")
        return presentation

    def lazy_load(self) -> Iterator[Document]:
        presentation = self.open()
        picture_text = PictureText(self)
        yield from picture_text.in_reading_order(self._slides_and_pictures(presentation, picture_text))

    def _slides_and_pictures(self, presentation: Any, picture_text: PictureText) -> Iterator[Document | Picture]:
        """Each slide's text and notes, then its pictures (kept as images and/or to read by OCR)."""
        total = len(presentation.slides)
        image_index = 0
        for number, slide in enumerate(presentation.slides, start=1):
            try:
                content = SlideContent()
                content.add_shapes(slide.shapes)
                if slide.has_notes_slide:
                    notes = slide.notes_slide.notes_text_frame
                    if notes is not None and notes.text.strip():
                        content.lines.append(f"{NOTES_PREFIX} {notes.text.strip()}")
            except Exception as exc:  # a damaged slide costs its own content, reported, not the deck
                self.warn(f"slide {number} cannot be read, its content is lost: {type(exc).__name__}: {exc}")
                content = SlideContent()
            meta = self.metadata(number, total)
            if content.runs:
                meta[FONT_RUNS_KEY] = content.runs
            yield Document(page_content="\n".join(content.lines), metadata=meta)
            for data, alt_text in content.pictures:
                image_index += 1
                if self.cfg.extract_images:
                    image = embedded_image_document(
                        self, data, page=number, total_pages=total, image_index=image_index, alt_text=alt_text
                    )
                    if image is not None:
                        yield image
                if picture_text.enabled and not is_decoration(self, data):
                    yield Picture(data, number, total, image_index)
