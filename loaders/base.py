"""What every loader shares: where the bytes come from (a file or an uploaded blob), the
inheritable metadata, and the content-derived document id."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePath
from typing import Any

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents.base import Blob

from keel.core.settings.ingestion import IngestionSettings
from keel.loaders.errors import DocumentLoadError

DOC_ID_HEX_CHARS = 24  # 96 bits of sha256: collisions are not a practical concern per user
_HASH_BLOCK_BYTES = 1 << 20


def doc_id_for_bytes(data: bytes) -> str:
    """Stable id of a document's content: the same bytes re-ingested replace themselves."""
    return hashlib.sha256(data).hexdigest()[:DOC_ID_HEX_CHARS]


def doc_id_for_file(path: str | Path) -> str:
    """``doc_id_for_bytes`` of a file's content, hashed in blocks (bounded memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()[:DOC_ID_HEX_CHARS]


def as_blob(source: str | Path | Blob) -> Blob:
    """A LangChain Blob for a path (read lazily) or the Blob itself (uploads)."""
    return source if isinstance(source, Blob) else Blob.from_path(Path(source))


def blob_name(blob: Blob) -> str:
    """The file name users know the document by (no folders)."""
    raw = str(blob.source or blob.path or "upload")
    return PurePath(raw.replace("\\", "/")).name or raw


def blob_doc_id(blob: Blob) -> str:
    """The document id of a blob's content: the same bytes get the same id, whatever the file name."""
    if blob.data is not None:
        data = blob.data.encode("utf-8") if isinstance(blob.data, str) else bytes(blob.data)
        return doc_id_for_bytes(data)
    return doc_id_for_file(blob.path)


def blob_size(blob: Blob) -> int:
    """The blob's size in bytes, in memory or on disk: what the upload limits are checked against."""
    if blob.data is not None:
        return len(blob.data.encode("utf-8") if isinstance(blob.data, str) else blob.data)
    return Path(blob.path).stat().st_size


def inheritable_metadata(
    *,
    user_id: str,
    conversation_id: str | None,
    source: str,
    doc_id: str,
    page: int,
    total_pages: int,
    multimodal_type: str = "text",
    **extra: Any,
) -> dict[str, Any]:
    """The inheritable metadata (owner, conversation, source, page, chunk index, type); splitters
    copy it onto every parent and child chunk.
    ``extra`` adds format-specific keys (an image's width, height, channels, ...)."""
    return {
        "user_id": user_id,
        "conversation_id": conversation_id,
        "source": source,
        "doc_id": doc_id,
        "page": page,
        "total_pages": total_pages,
        "chunk_index": 0,
        "multimodal_type": multimodal_type,
        **extra,
    }


class KeelLoader(BaseLoader):
    """A loader over a file path or an uploaded Blob, for one user (and conversation)."""

    def __init__(
        self,
        source: str | Path | Blob,
        *,
        user_id: str = "default",
        conversation_id: str | None = None,
        cfg: IngestionSettings | None = None,
    ):
        self.blob = as_blob(source)
        self.name = blob_name(self.blob)
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.cfg = cfg or IngestionSettings()
        self._doc_id: str | None = None
        # What was read only in part (a page lost, OCR unsure or unavailable), for the ingest report.
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    @property
    def path(self) -> Path | None:
        """The file on disk, or None for an in-memory upload."""
        return Path(self.blob.path) if self.blob.data is None and self.blob.path else None

    @property
    def doc_id(self) -> str:
        if self._doc_id is None:
            self._doc_id = blob_doc_id(self.blob)
        return self._doc_id

    def metadata(self, page: int, total_pages: int, multimodal_type: str = "text", **extra: Any) -> dict[str, Any]:
        return inheritable_metadata(
            user_id=self.user_id,
            conversation_id=self.conversation_id,
            source=self.name,
            doc_id=self.doc_id,
            page=page,
            total_pages=total_pages,
            multimodal_type=multimodal_type,
            **extra,
        )

    def read_bytes(self) -> bytes:
        try:
            return self.blob.as_bytes()
        except OSError as exc:
            raise DocumentLoadError(self.name, f"cannot read file: {exc.strerror or exc}") from exc
