"""Base64 uploads (what an API client sends): a document as a base64 string with its file name and
MIME type, decoded, checked and routed to the loader of its format.

``Base64BlobParser`` is a LangChain ``BaseBlobParser`` over Blobs whose data is the base64 text;
``blob_from_base64`` and ``loader_for_base64`` are the plain-function forms the pipeline uses.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from langchain_core.document_loaders import BaseBlobParser, BaseLoader
from langchain_core.documents import Document
from langchain_core.documents.base import Blob

from keel.core.settings.ingestion import IngestionSettings
from keel.loaders.errors import UnsupportedDocumentError
from keel.loaders.registry import loader_for_blob

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[\w.-]+)*;base64,", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def decode_base64(data_base64: str | bytes, filename: str, max_bytes: int) -> tuple[bytes, str | None]:
    """The decoded bytes (and the MIME type of a ``data:`` URL prefix, if any).

    The size limit is checked on the encoded length first, so an oversized upload is refused
    before it is decoded."""
    if isinstance(data_base64, bytes):
        try:
            data_base64 = data_base64.decode("ascii")
        except UnicodeDecodeError as exc:
            raise UnsupportedDocumentError(filename, "invalid base64: it contains non-ASCII bytes") from exc
    if not isinstance(data_base64, str):
        raise UnsupportedDocumentError(filename, f"invalid base64: expected a string, got {type(data_base64).__name__}")
    mime = None
    match = _DATA_URL.match(data_base64)
    if match:
        mime = match.group("mime")
        data_base64 = data_base64[match.end() :]
    compact = _WHITESPACE.sub("", data_base64)
    if not compact:
        raise UnsupportedDocumentError(filename, "empty file")
    estimated = len(compact) * 3 // 4
    if estimated > max_bytes + 2:
        raise UnsupportedDocumentError(filename, f"too large: about {estimated} bytes (limit {max_bytes})")
    altchars = b"-_" if ("-" in compact or "_" in compact) else None  # URL-safe alphabet
    padded = compact + "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(padded.encode("ascii"), altchars=altchars, validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        raise UnsupportedDocumentError(filename, f"invalid base64: {exc}") from exc
    return data, mime


def blob_from_base64(
    filename: str, data_base64: str | bytes, mime_type: str | None = None, *, max_bytes: int | None = None
) -> Blob:
    """A Blob of the decoded upload, named ``filename`` (no folders), with its MIME type."""
    if not filename or not str(filename).strip():
        raise UnsupportedDocumentError("upload", "no file name given")
    limit = IngestionSettings().max_file_bytes if max_bytes is None else max_bytes
    data, url_mime = decode_base64(data_base64, filename, limit)
    return Blob.from_data(data, path=str(filename), mime_type=mime_type or url_mime)


def loader_for_base64(
    filename: str,
    data_base64: str | bytes,
    mime_type: str | None = None,
    password: str | None = None,
    *,
    cfg: IngestionSettings | None = None,
    user_id: str = "default",
    conversation_id: str | None = None,
) -> BaseLoader:
    """The loader for a base64 upload, or ``UnsupportedDocumentError`` naming the file and why."""
    cfg = cfg or IngestionSettings()
    blob = blob_from_base64(filename, data_base64, mime_type, max_bytes=cfg.max_file_bytes)
    return loader_for_blob(blob, password, cfg=cfg, user_id=user_id, conversation_id=conversation_id)


class Base64BlobParser(BaseBlobParser):
    """Parses Blobs whose data is a document in base64 (``blob.path`` names the file,
    ``blob.mimetype`` is its type) with the loader of that format."""

    def __init__(
        self,
        *,
        cfg: IngestionSettings | None = None,
        user_id: str = "default",
        conversation_id: str | None = None,
        password: str | None = None,
    ):
        self.cfg = cfg or IngestionSettings()
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.password = password

    def lazy_parse(self, blob: Blob) -> Iterator[Document]:
        raw = blob.data if blob.data is not None else blob.as_bytes()
        loader = loader_for_base64(
            str(blob.path or blob.source or "upload"),
            raw,
            blob.mimetype,
            self.password,
            cfg=self.cfg,
            user_id=self.user_id,
            conversation_id=self.conversation_id,
        )
        yield from loader.lazy_load()
