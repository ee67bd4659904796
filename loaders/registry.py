"""Pick the loader for a file by its extension, rejecting what Keel cannot read with a reason.

``register_loader`` lets later formats (Word, PowerPoint, images) and users' own loaders plug in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langchain_core.document_loaders import BaseLoader

from graph.configuration import Configuration
from loaders.errors import UnsupportedDocumentError
from loaders.pdf import PDF_EXTENSIONS, PDFLoader
from loaders.text import TEXT_EXTENSIONS, TextLoader

# factory(path, password=..., user_id=..., conversation_id=..., cfg=...) -> BaseLoader;
# a factory raises UnsupportedDocumentError itself for content it can tell is unreadable.
LoaderFactory = Callable[..., BaseLoader]

LEGACY_FORMATS = {
    ".doc": "legacy Word 97-2003 format (.doc); save it as .docx or PDF",
    ".ppt": "legacy PowerPoint 97-2003 format (.ppt); save it as .pptx or PDF",
    ".xls": "legacy Excel 97-2003 format (.xls); export it as PDF or text",
}


def _text_factory(path: Path, *, password, user_id, conversation_id, cfg) -> BaseLoader:
    return TextLoader(path, user_id=user_id, conversation_id=conversation_id)


def _pdf_factory(path: Path, *, password, user_id, conversation_id, cfg) -> BaseLoader:
    loader = PDFLoader(
        path, password=password, user_id=user_id, conversation_id=conversation_id, max_pages=cfg.max_pages
    )
    loader.open()  # header, end marker, password and page limit are checked before ingestion starts
    return loader


_FACTORIES: dict[str, LoaderFactory] = {
    **{ext: _text_factory for ext in TEXT_EXTENSIONS},
    **{ext: _pdf_factory for ext in PDF_EXTENSIONS},
}


def register_loader(extensions: tuple[str, ...] | list[str], factory: LoaderFactory) -> None:
    """Route files with these extensions (".docx", ...) to ``factory``."""
    for ext in extensions:
        _FACTORIES[ext.lower() if ext.startswith(".") else f".{ext.lower()}"] = factory


def supported_extensions() -> list[str]:
    return sorted(_FACTORIES)


def loader_for(
    path: str | Path,
    password: str | None = None,
    *,
    cfg: Configuration | None = None,
    user_id: str = "default",
    conversation_id: str | None = None,
) -> BaseLoader:
    """The loader for ``path``, or ``UnsupportedDocumentError`` naming the file and the reason."""
    cfg = cfg or Configuration()
    path = Path(path)
    if not path.is_file():
        reason = "is a folder, not a file" if path.is_dir() else "no such file"
        raise UnsupportedDocumentError(path, reason)
    ext = path.suffix.lower()
    if ext in LEGACY_FORMATS:
        raise UnsupportedDocumentError(path, LEGACY_FORMATS[ext])
    factory = _FACTORIES.get(ext)
    if factory is None:
        shown = ext or "(no extension)"
        raise UnsupportedDocumentError(
            path, f"unsupported file type {shown}; supported: {', '.join(supported_extensions())}"
        )
    size = path.stat().st_size
    if size > cfg.max_file_bytes:
        raise UnsupportedDocumentError(path, f"too large: {size} bytes (limit {cfg.max_file_bytes})")
    if size == 0:
        raise UnsupportedDocumentError(path, "empty file")
    return factory(path, password=password, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
