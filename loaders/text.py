"""Plain text and Markdown: one Document per file (page 1 of 1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from loaders.base import doc_id_for_bytes, inheritable_metadata
from loaders.errors import DocumentLoadError

TEXT_EXTENSIONS = (".txt", ".md", ".markdown")


class TextLoader(BaseLoader):
    """UTF-8 text (a BOM is accepted). Undecodable bytes are an error, never silently replaced,
    so a binary file renamed to .txt is reported instead of indexed as garbage."""

    def __init__(
        self,
        path: str | Path,
        *,
        user_id: str = "default",
        conversation_id: str | None = None,
    ):
        self.path = Path(path)
        self.user_id = user_id
        self.conversation_id = conversation_id

    def lazy_load(self) -> Iterator[Document]:
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise DocumentLoadError(self.path, f"cannot read file: {exc.strerror or exc}") from exc
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            bad = data[exc.start : exc.start + 1].hex()
            raise DocumentLoadError(
                self.path, f"not UTF-8 text: undecodable byte 0x{bad} at offset {exc.start}"
            ) from exc
        yield Document(
            page_content=text,
            metadata=inheritable_metadata(
                user_id=self.user_id,
                conversation_id=self.conversation_id,
                source=self.path.name,
                doc_id=doc_id_for_bytes(data),
                page=1,
                total_pages=1,
            ),
        )
