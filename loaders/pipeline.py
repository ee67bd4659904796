"""The lazy ingestion pipeline: files (or uploads) in, parents and children stored, one document
at a time.

load → split (parent-child, n-gram hints) → embed in batches of cfg.embedding_batch_size → store,
streamed document by document, so memory is bounded by the largest single document (itself
bounded by cfg.max_file_bytes and cfg.max_pages) whatever the number of files. A file that fails is
reported by name with the reason and the rest go on; so is a file whose write finds Redis gone
("Redis unavailable at <url>"), and the files after it are only tried once Redis answers a ping
again (``IngestReport.store_unavailable``). A document is stored whole or not at all:
nothing is written until it is loaded, split and embedded, and ``RedisChunkStore.add_document``
replaces the old copy in one transaction (undone if a command fails inside it), so a failure
half-way leaves the earlier copy as it was.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from keel.core.settings import IngestRunSettings
from keel.loaders.base import doc_id_for_bytes, inheritable_metadata
from keel.loaders.blob import loader_for_base64
from keel.loaders.errors import DocumentLoadError
from keel.loaders.registry import loader_for
from keel.splitters.parent_child import ParentChildSplitter
from keel.stores.tag_filters import validate_tag_id
from keel.stores.vector_store import EMBEDDING_TEXT_KEY

logger = logging.getLogger(__name__)
NO_TEXT_REASON = "no extractable text (empty, or scanned images without a text layer)"
PICTURES_ONLY_WARNING = (
    "no text found, not even by OCR: stored as {images} picture(s) only; questions about it cannot be "
    "answered from text"
)
REDIS_UNAVAILABLE = "Redis unavailable"


@dataclass
class IngestReport:
    """What one ingest call did. ``errors`` holds ``{"source": ..., "error": ...}`` per failed file;
    ``warnings`` holds ``{"source": ..., "warning": ...}`` for what a stored file lost (a page that
    could not be read, pictures OCR could not read or read with low confidence)."""

    documents: int = 0
    parents: int = 0
    children: int = 0
    seconds: float = 0.0
    errors: list[dict[str, str]] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def store_unavailable(self) -> bool:
        """Some file was not stored because Redis could not be reached (not the file's fault)."""
        return any(error["error"].startswith(REDIS_UNAVAILABLE) for error in self.errors)


def expand_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files as given, and the files under folders (recursively, sorted, hidden ones skipped)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in child.relative_to(path).parts)
                if child.is_file() and not hidden:
                    yield child
        else:
            yield path  # a missing file is reported by loader_for


def ingest(
    paths: Iterable[str | Path],
    store: Any,
    cfg: IngestRunSettings,
    user_id: str,
    conversation_id: str | None = None,
    password: str | None = None,
    progress: bool = False,
) -> IngestReport:
    """Ingest files and folders for ``user_id`` into ``store`` (a RedisChunkStore)."""
    _check_owner(user_id, conversation_id)
    started = time.perf_counter()
    report = IngestReport()
    splitter = ParentChildSplitter.from_config(cfg)
    files = list(expand_paths(paths))
    bar = _progress_bar(len(files), progress)
    try:
        for path in files:
            bar.set_postfix_str(path.name[:40], refresh=False)
            if report.store_unavailable and not _store_answers(store):
                report.errors.append({"source": str(path), "error": _unavailable_reason(store, "not tried")})
                bar.update(1)
                continue
            _ingest_one(
                lambda: loader_for(path, password, cfg=cfg, user_id=user_id, conversation_id=conversation_id),
                str(path), splitter, store, report, cfg.embedding_batch_size,
            )
            bar.update(1)
    finally:
        bar.close()
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def ingest_base64(
    filename: str,
    data_base64: str | bytes,
    store: Any,
    cfg: IngestRunSettings,
    user_id: str,
    conversation_id: str | None = None,
    mime_type: str | None = None,
    password: str | None = None,
) -> IngestReport:
    """Ingest one upload sent as base64 with its file name (and MIME type): what API clients send."""
    _check_owner(user_id, conversation_id)
    started = time.perf_counter()
    report = IngestReport()
    _ingest_one(
        lambda: loader_for_base64(
            filename, data_base64, mime_type, password, cfg=cfg, user_id=user_id, conversation_id=conversation_id
        ),
        str(filename), ParentChildSplitter.from_config(cfg), store, report, cfg.embedding_batch_size,
    )
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def ingest_text(
    text: str,
    source: str,
    store: Any,
    cfg: IngestRunSettings,
    user_id: str,
    conversation_id: str | None = None,
    doc_id: str | None = None,
) -> IngestReport:
    """Ingest an in-memory text as a one-page document named ``source`` (API uploads, tests)."""
    _check_owner(user_id, conversation_id)
    started = time.perf_counter()
    report = IngestReport()
    page = Document(
        page_content=text,
        metadata=inheritable_metadata(
            user_id=user_id,
            conversation_id=conversation_id,
            source=source,
            doc_id=doc_id or doc_id_for_bytes(text.encode("utf-8")),
            page=1,
            total_pages=1,
        ),
    )
    try:
        store_document([page], ParentChildSplitter.from_config(cfg), store, report, source, cfg.embedding_batch_size)
    except DocumentLoadError as exc:
        report.errors.append({"source": source, "error": exc.reason})
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _ingest_one(
    make_loader, source: str, splitter: ParentChildSplitter, store: Any, report: IngestReport, batch_size: int
) -> None:
    """Load, split and store one document; its failure becomes an entry of ``report.errors``, what
    a stored one lost (the loader's warnings) entries of ``report.warnings``."""
    try:
        loader: BaseLoader = make_loader()
        warnings = store_document(loader.lazy_load(), splitter, store, report, source, batch_size)
        for warning in [*getattr(loader, "warnings", []), *warnings]:
            report.warnings.append({"source": source, "warning": warning})
    except (redis.ConnectionError, redis.TimeoutError) as exc:  # the store is down, not the file bad
        logger.warning("storing %s failed: Redis is unavailable (%s)", source, exc)
        report.errors.append({"source": source, "error": _unavailable_reason(store, str(exc))})
    except DocumentLoadError as exc:
        report.errors.append({"source": source, "error": exc.reason})
    except Exception as exc:  # one bad file must not stop the others
        logger.exception("ingesting %s failed", source)
        report.errors.append({"source": source, "error": f"{type(exc).__name__}: {exc}"})


def store_document(
    pages: Iterable[Document],
    splitter: ParentChildSplitter,
    store: Any,
    report: IngestReport,
    source: str,
    batch_size: int | None = None,
) -> None:
    """Split one document's pages (text and images) and store them in one transaction, embedded
    in batches of ``batch_size`` (the ingest call's cfg, so it cannot disagree with ``store.cfg``).

    A document without text, not even read by OCR from its pictures, is stored as its pictures (as
    an image file is), with a warning that a text model cannot answer from it; one with neither text
    nor pictures is rejected. Returns the warnings about the document as a whole."""
    pages = list(pages)
    parents, children = splitter.split_documents(pages)
    if not children:
        raise DocumentLoadError(Path(source).name, NO_TEXT_REASON)
    warnings = []
    if not any(child.metadata.get("multimodal_type", "text") == "text" for child in children):
        images = sum(1 for page in pages if page.metadata.get("multimodal_type") == "image")
        if not images:
            raise DocumentLoadError(Path(source).name, NO_TEXT_REASON)
        is_image_file = all(page.metadata.get("multimodal_type") == "image" for page in pages)
        if not is_image_file:
            warnings.append(PICTURES_ONLY_WARNING.format(images=images))
    # Similar lengths side by side: each embedding batch pads less (the order is not stored).
    by_length = sorted(children, key=lambda child: len(child.metadata.get(EMBEDDING_TEXT_KEY) or child.page_content))
    store.add_document(parents, by_length, batch_size=batch_size)
    report.documents += 1
    report.parents += len(parents)
    report.children += len(children)
    report.doc_ids.append(parents[0].metadata["doc_id"])
    return warnings


def _redis_url(store: Any) -> str:
    """The store's Redis as a URL without password, for the per-file report."""
    kwargs = getattr(getattr(getattr(store, "client", None), "connection_pool", None), "connection_kwargs", {})
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


def _unavailable_reason(store: Any, detail: str) -> str:
    return f"{REDIS_UNAVAILABLE} at {_redis_url(store)} ({detail}); ingest this file again once Redis is back"


def _store_answers(store: Any) -> bool:
    """Whether the store's Redis answers a ping (bounded by the client's socket timeouts)."""
    client = getattr(store, "client", None)
    if client is None:
        return True
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError):
        return False


def _check_owner(user_id: str, conversation_id: str | None) -> None:
    """Bad ids are the caller's mistake, not a file's: fail once, before any work."""
    validate_tag_id("user_id", user_id)
    if conversation_id is not None:
        validate_tag_id("conversation_id", conversation_id)


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="file", desc="ingest", file=sys.stderr, disable=not enabled, leave=False)
