"""What every loader shares: the inheritable metadata and the content-derived document id."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

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


def inheritable_metadata(
    *,
    user_id: str,
    conversation_id: str | None,
    source: str,
    doc_id: str,
    page: int,
    total_pages: int,
    multimodal_type: str = "text",
) -> dict[str, Any]:
    """Seed 003's inheritable metadata; splitters copy it onto every parent and child chunk."""
    return {
        "user_id": user_id,
        "conversation_id": conversation_id,
        "source": source,
        "doc_id": doc_id,
        "page": page,
        "total_pages": total_pages,
        "chunk_index": 0,
        "multimodal_type": multimodal_type,
    }
