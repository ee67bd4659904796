"""PDF with pypdf: one Document per page, with page (1-based) and total_pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from loaders.base import doc_id_for_file, inheritable_metadata
from loaders.errors import DocumentLoadError, PasswordRequiredError, UnsupportedDocumentError

PDF_EXTENSIONS = (".pdf",)
_HEADER = b"%PDF-"
_EOF_MARKER = b"%%EOF"
_HEADER_SEARCH_BYTES = 1024  # the PDF spec tolerates junk before the header
_EOF_SEARCH_BYTES = 4096  # ... and a little after the last %%EOF


class PDFLoader(BaseLoader):
    """Text per page. Encrypted files open with ``password`` (an empty owner-only password needs
    none); otherwise a ``PasswordRequiredError`` names the file. Truncated or corrupt files are
    rejected up front by ``open()`` rather than half-read."""

    def __init__(
        self,
        path: str | Path,
        *,
        password: str | None = None,
        user_id: str = "default",
        conversation_id: str | None = None,
        max_pages: int | None = None,
    ):
        self.path = Path(path)
        self.password = password
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.max_pages = max_pages

    def open(self) -> PdfReader:
        """Open and check the file: header, end marker, decryption, readable page count."""
        self._check_markers()
        try:
            reader = PdfReader(self.path, strict=False)
            if reader.is_encrypted:
                self._decrypt(reader)
            page_count = len(reader.pages)
        except DocumentLoadError:
            raise
        except FileNotDecryptedError as exc:
            raise PasswordRequiredError(self.path, "encrypted PDF: a password is required") from exc
        except DependencyError as exc:
            raise UnsupportedDocumentError(
                self.path, f"encrypted PDF needs an extra package to decrypt: {exc}"
            ) from exc
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
            raise UnsupportedDocumentError(self.path, f"corrupt PDF: {exc}") from exc
        if page_count == 0:
            raise UnsupportedDocumentError(self.path, "corrupt PDF: no pages")
        if self.max_pages is not None and page_count > self.max_pages:
            raise UnsupportedDocumentError(
                self.path, f"too many pages: {page_count} (limit {self.max_pages})"
            )
        return reader

    def lazy_load(self) -> Iterator[Document]:
        reader = self.open()
        doc_id = doc_id_for_file(self.path)
        total = len(reader.pages)
        for index, page in enumerate(reader.pages):
            try:
                text = page.extract_text() or ""
            except Exception as exc:  # pypdf raises many types on damaged content streams
                raise DocumentLoadError(self.path, f"page {index + 1} cannot be read: {exc}") from exc
            yield Document(
                page_content=text,
                metadata=inheritable_metadata(
                    user_id=self.user_id,
                    conversation_id=self.conversation_id,
                    source=self.path.name,
                    doc_id=doc_id,
                    page=index + 1,
                    total_pages=total,
                ),
            )

    def _check_markers(self) -> None:
        try:
            size = self.path.stat().st_size
            with open(self.path, "rb") as handle:
                head = handle.read(_HEADER_SEARCH_BYTES)
                handle.seek(max(0, size - _EOF_SEARCH_BYTES))
                tail = handle.read()
        except OSError as exc:
            raise DocumentLoadError(self.path, f"cannot read file: {exc.strerror or exc}") from exc
        if _HEADER not in head:
            raise UnsupportedDocumentError(self.path, "corrupt PDF: no %PDF- header (not a PDF file)")
        if _EOF_MARKER not in tail:
            raise UnsupportedDocumentError(self.path, "corrupt or truncated PDF: no %%EOF end marker")

    def _decrypt(self, reader: PdfReader) -> None:
        candidates = [self.password] if self.password is not None else [""]
        for candidate in candidates:
            if reader.decrypt(candidate):
                return
        if self.password is None:
            raise PasswordRequiredError(self.path, "encrypted PDF: a password is required")
        raise PasswordRequiredError(self.path, "encrypted PDF: the password is wrong")
