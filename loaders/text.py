"""Plain text and Markdown: one Document per file (page 1 of 1). A Markdown pipe table becomes one
``column: value`` line per row, as tables from every other format do (loaders/tables.py)."""

from __future__ import annotations

from collections.abc import Iterator

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError
from keel.loaders.tables import TableText, pipe_tables_as_lines

TEXT_EXTENSIONS = (".txt", ".md", ".markdown")


class PlainTextLoader(KeelLoader):
    """UTF-8 text (a BOM is accepted). Undecodable bytes are an error, never silently replaced,
    so a binary file renamed to .txt is reported instead of indexed as garbage."""

    def lazy_load(self) -> Iterator[Document]:
        data = self.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            bad = data[exc.start : exc.start + 1].hex()
            raise DocumentLoadError(
                self.name, f"not UTF-8 text: undecodable byte 0x{bad} at offset {exc.start}"
            ) from exc
        if "\x00" in text:
            raise DocumentLoadError(self.name, "not text: it contains NUL bytes (a binary file?)")
        yield Document(page_content=pipe_tables_as_lines(text, TableText(self)), metadata=self.metadata(1, 1))
