"""Pick the loader for a file (by extension) or an upload (by file name, MIME type or content),
rejecting what Keel cannot read with a reason.

``register_loader`` lets users' own loaders plug in.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents.base import Blob

from keel.core.settings.ingestion import IngestionSettings
from keel.loaders.base import as_blob, blob_name, blob_size
from keel.loaders.docx import DOCX_EXTENSIONS, DocxLoader
from keel.loaders.errors import UnsupportedDocumentError
from keel.loaders.html import HTML_EXTENSIONS, HtmlLoader
from keel.loaders.image import IMAGE_EXTENSIONS, IMAGE_MIME_TYPES, ImageLoader
from keel.loaders.legacy import (
    DOC_EXTENSIONS,
    PPT_EXTENSIONS,
    XLS_EXTENSIONS,
    DocLoader,
    PptLoader,
    XlsLoader,
)
from keel.loaders.ooxml import OLE_MAGIC, ZIP_MAGIC
from keel.loaders.pdf import PDF_EXTENSIONS, PdfLoader
from keel.loaders.pptx import PPTX_EXTENSIONS, PptxLoader
from keel.loaders.tables import CSV_EXTENSIONS, XLSX_EXTENSIONS, CsvLoader, XlsxLoader
from keel.loaders.text import TEXT_EXTENSIONS, PlainTextLoader

# factory(blob, password=..., user_id=..., conversation_id=..., cfg=...) -> BaseLoader; the blob is
# a LangChain Blob (a path read lazily, or uploaded bytes). A factory raises
# UnsupportedDocumentError itself for content it can tell is unreadable.
LoaderFactory = Callable[..., BaseLoader]

# Formats recognised but not read, each with what the user can do (.doc/.ppt/.xls are read:
# loaders/legacy.py).
LEGACY_FORMATS: dict[str, str] = {}
MIME_EXTENSIONS = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/msword": ".doc",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.ms-excel": ".xls",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/html": ".html",
    "application/xhtml+xml": ".xhtml",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    **IMAGE_MIME_TYPES,
}
_MAGIC = (
    (b"%PDF-", ".pdf"),
    (b"\x89PNG\r\n\x1a\n", ".png"),
    (b"\xff\xd8\xff", ".jpg"),
    (b"GIF87a", ".gif"),
    (b"GIF89a", ".gif"),
    (b"II*\x00", ".tiff"),
    (b"MM\x00*", ".tiff"),
)


def _text_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    return PlainTextLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)


def _image_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    loader = ImageLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
    loader.open()
    return loader


def _pdf_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    loader = PdfLoader(blob, password=password, user_id=user_id, conversation_id=conversation_id, cfg=cfg,
                       font_runs=cfg.ngram_hints)
    loader.open()  # header, end marker, password and page limit are checked before ingestion starts
    return loader


def _docx_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    loader = DocxLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
    loader.open()  # legacy format, damaged package, zip bomb: rejected before ingestion starts
    return loader


def _pptx_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    loader = PptxLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
    loader.open()
    return loader


def _plain_factory(loader_class: type) -> LoaderFactory:
    """A factory for a loader that needs no password and checks its file while loading."""

    def factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
        return loader_class(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)

    return factory


def _opened_factory(loader_class: type) -> LoaderFactory:
    """A factory for a loader whose ``open()`` reads and checks the whole file (legacy formats):
    a damaged file, or a converter that is not installed, is reported before ingestion starts."""

    def factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
        loader = loader_class(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
        loader.open()
        return loader

    return factory


def _xlsx_factory(blob: Blob, *, password, user_id, conversation_id, cfg: IngestionSettings) -> BaseLoader:
    loader = XlsxLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
    loader.open()  # legacy or damaged package, zip bomb: rejected before ingestion starts
    return loader


_FACTORIES: dict[str, LoaderFactory] = {
    **{ext: _text_factory for ext in TEXT_EXTENSIONS},
    **{ext: _plain_factory(HtmlLoader) for ext in HTML_EXTENSIONS},
    **{ext: _plain_factory(CsvLoader) for ext in CSV_EXTENSIONS},
    **{ext: _xlsx_factory for ext in XLSX_EXTENSIONS},
    **{ext: _opened_factory(DocLoader) for ext in DOC_EXTENSIONS},
    **{ext: _opened_factory(XlsLoader) for ext in XLS_EXTENSIONS},
    **{ext: _opened_factory(PptLoader) for ext in PPT_EXTENSIONS},
    **{ext: _pdf_factory for ext in PDF_EXTENSIONS},
    **{ext: _docx_factory for ext in DOCX_EXTENSIONS},
    **{ext: _pptx_factory for ext in PPTX_EXTENSIONS},
    **{ext: _image_factory for ext in IMAGE_EXTENSIONS},
}


_REGISTERED: dict[str, LoaderFactory] = {}  # what register_loader added: ingest workers get it too


def register_loader(extensions: tuple[str, ...] | list[str], factory: LoaderFactory) -> None:
    """Route files with these extensions (".epub", ...) to ``factory``."""
    for ext in extensions:
        key = ext.lower() if ext.startswith(".") else f".{ext.lower()}"
        _FACTORIES[key] = _REGISTERED[key] = factory


def registered_loaders() -> dict[str, LoaderFactory]:
    """The loaders added with ``register_loader`` in this process, by extension."""
    return dict(_REGISTERED)


def supported_extensions() -> list[str]:
    """The file extensions a loader is registered for, sorted: what an upload may be."""
    return sorted(_FACTORIES)


def sniff_extension(head: bytes) -> str | None:
    """The extension that the first bytes of a file announce, for uploads without a usable name."""
    for magic, ext in _MAGIC:
        if head.startswith(magic):
            return ext
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return ".webp"
    return None


# OLE2 directory entries hold stream names in UTF-16LE; the main stream tells the format.
_OLE_STREAMS = (
    ("WordDocument", ".doc"),
    ("PowerPoint Document", ".ppt"),
    ("Workbook", ".xls"),
    ("EncryptedPackage", "(encrypted office)"),
)
_OLE_GENERIC = "(ole2)"  # pseudo-extensions: no file name has them (they do not start with ".")
LEGACY_FORMATS.update({
    "(encrypted office)": "password-protected Office file (OLE2 container); save it without a password",
    _OLE_GENERIC: "legacy Office 97-2003 file (OLE2 container); save it as .docx, .pptx or PDF",
})


def sniff_office(blob: Blob, cfg: IngestionSettings | None = None) -> str | None:
    """.docx / .pptx / .xlsx for an Office Open XML package (by its [Content_Types].xml, else its word/ or
    ppt/ parts), the legacy format for an OLE2 file; None when the content is neither. Reads at
    most cfg.zip_ratio_check_min_bytes of [Content_Types].xml: a zip bomb is not unpacked here."""
    cfg = cfg or IngestionSettings()
    with blob.as_bytes_io() as stream:
        head = stream.read(len(OLE_MAGIC))
        if head.startswith(OLE_MAGIC):
            stream.seek(0)
            data = stream.read()  # bounded by cfg.max_file_bytes, checked before routing
            found = [ext for name, ext in _OLE_STREAMS if name.encode("utf-16-le") in data]
            return found[0] if found else _OLE_GENERIC
        if not head.startswith(ZIP_MAGIC):
            return None
        stream.seek(0)
        try:
            with zipfile.ZipFile(stream) as package:
                names = package.namelist()
                types = b""
                if "[Content_Types].xml" in names:
                    with package.open("[Content_Types].xml") as part:
                        types = part.read(cfg.zip_ratio_check_min_bytes)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, KeyError, zlib.error):
            return None  # a damaged or foreign ZIP: "unsupported file type" says it
    if b"wordprocessingml.document.main" in types or "word/document.xml" in names:
        return ".docx"
    if b"presentationml.presentation.main" in types or "ppt/presentation.xml" in names:
        return ".pptx"
    if b"spreadsheetml.sheet.main" in types or "xl/workbook.xml" in names:
        return ".xlsx"
    return None


def extension_of(blob: Blob, cfg: IngestionSettings | None = None) -> str:
    """The extension to route by: the file name's when Keel knows it, else the MIME type's, else
    the one the content announces; "" when none tells."""
    ext = Path(blob_name(blob)).suffix.lower()
    if ext in _FACTORIES or ext in LEGACY_FORMATS:
        return ext
    mime = (blob.mimetype or "").split(";")[0].strip().lower()
    if mime in MIME_EXTENSIONS:
        return MIME_EXTENSIONS[mime]
    with blob.as_bytes_io() as stream:
        sniffed = sniff_extension(stream.read(16))
    return sniffed or sniff_office(blob, cfg) or ext


def loader_for(
    path: str | Path | Blob,
    password: str | None = None,
    *,
    cfg: IngestionSettings | None = None,
    user_id: str = "default",
    conversation_id: str | None = None,
) -> BaseLoader:
    """The loader for a file path (or a Blob), or ``UnsupportedDocumentError`` naming the file
    and the reason."""
    if not isinstance(path, Blob):
        path = Path(path)
        if not path.is_file():
            reason = "is a folder, not a file" if path.is_dir() else "no such file"
            raise UnsupportedDocumentError(path, reason)
    return loader_for_blob(as_blob(path), password, cfg=cfg, user_id=user_id, conversation_id=conversation_id)


def loader_for_blob(
    blob: Blob,
    password: str | None = None,
    *,
    cfg: IngestionSettings | None = None,
    user_id: str = "default",
    conversation_id: str | None = None,
) -> BaseLoader:
    """The loader for a Blob (a path or uploaded bytes with a file name and maybe a MIME type)."""
    cfg = cfg or IngestionSettings()
    name = blob_name(blob)
    try:
        size = blob_size(blob)
    except OSError as exc:
        raise UnsupportedDocumentError(name, f"cannot read file: {exc.strerror or exc}") from exc
    if size > cfg.max_file_bytes:
        raise UnsupportedDocumentError(name, f"too large: {size} bytes (limit {cfg.max_file_bytes})")
    if size == 0:
        raise UnsupportedDocumentError(name, "empty file")
    ext = extension_of(blob, cfg)
    if ext in LEGACY_FORMATS:
        raise UnsupportedDocumentError(name, LEGACY_FORMATS[ext])
    factory = _FACTORIES.get(ext)
    if factory is None:
        shown = ext or "(no extension)"
        raise UnsupportedDocumentError(
            name, f"unsupported file type {shown}; supported: {', '.join(supported_extensions())}"
        )
    return factory(blob, password=password, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
