"""The lazy ingestion pipeline: files (or uploads) in, parents and children stored, one document
at a time.

load → split (parent-child, n-gram hints) → embed in batches of cfg.embedding_batch_size → store,
streamed document by document, so memory is bounded by a few documents (each bounded by
cfg.max_file_bytes and cfg.max_pages) whatever the number of files. Loading and splitting run ahead
in worker processes when a call has several files (``loaders.prefetch``), embedding and storing
here. A file that fails is
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
from keel.loaders.prefetch import prepared_documents
from keel.loaders.prepared import PreparedDocument, prepare_document
from keel.splitters.parent_child import ParentChildSplitter
from keel.stores.tag_filters import validate_tag_id

logger = logging.getLogger(__name__)
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
    files = list(expand_paths(paths))
    bar = _progress_bar(len(files), progress)
    stored_from: list[int] = []  # the file position of each of report.doc_ids
    try:
        for prepared in prepared_documents(files, cfg, user_id, conversation_id, password):
            bar.set_postfix_str(Path(prepared.source).name[:40], refresh=False)
            if report.store_unavailable and not _store_answers(store):
                report.errors.append({"source": prepared.source, "error": _unavailable_reason(store, "not tried")})
            elif store_prepared(prepared, store, report, cfg.embedding_batch_size):
                stored_from.append(prepared.position)
            bar.update(1)
    finally:
        bar.close()
    _in_file_order(report, files, stored_from)
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
    prepared = prepare_document(
        lambda: loader_for_base64(
            filename, data_base64, mime_type, password, cfg=cfg, user_id=user_id, conversation_id=conversation_id
        ),
        str(filename), ParentChildSplitter.from_config(cfg),
    )
    store_prepared(prepared, store, report, cfg.embedding_batch_size)
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
    prepared = prepare_document(lambda: _Pages([page]), source, ParentChildSplitter.from_config(cfg))
    store_prepared(prepared, store, report, cfg.embedding_batch_size)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def store_prepared(prepared: PreparedDocument, store: Any, report: IngestReport, batch_size: int | None = None) -> bool:
    """Embed and store one prepared document in one transaction (``store.add_document``), embedded
    in batches of ``batch_size`` (the ingest call's cfg, so it cannot disagree with ``store.cfg``);
    its failure, or the file's own, becomes an entry of ``report.errors``, what it lost entries of
    ``report.warnings``. Returns whether it was stored."""
    source = prepared.source
    if not prepared.ok:
        if prepared.failure_traceback:
            logger.error("ingesting %s failed\n%s", source, prepared.failure_traceback.rstrip())
        report.errors.append({"source": source, "error": prepared.error})
        return False
    try:
        store.add_document(prepared.parents, prepared.children, batch_size=batch_size)
    except (redis.ConnectionError, redis.TimeoutError) as exc:  # the store is down, not the file bad
        logger.warning("storing %s failed: Redis is unavailable (%s)", source, exc)
        report.errors.append({"source": source, "error": _unavailable_reason(store, str(exc))})
        return False
    except Exception as exc:  # one bad file must not stop the others
        logger.exception("storing %s failed", source)
        report.errors.append({"source": source, "error": f"{type(exc).__name__}: {exc}"})
        return False
    report.documents += 1
    report.parents += len(prepared.parents)
    report.children += len(prepared.children)
    report.doc_ids.append(prepared.parents[0].metadata["doc_id"])
    report.warnings.extend({"source": source, "warning": warning} for warning in prepared.warnings)
    return True


class _Pages(BaseLoader):
    """Pages already in memory, as a loader."""

    def __init__(self, pages: list[Document]):
        self.pages = pages

    def lazy_load(self) -> Iterator[Document]:
        yield from self.pages


def _in_file_order(report: IngestReport, files: list[Path], stored_from: list[int]) -> None:
    """The report lists files in the order they were given, whatever order workers read them in."""
    first = {}
    for position, path in enumerate(files):
        first.setdefault(str(path), position)
    report.errors.sort(key=lambda entry: first.get(entry["source"], len(files)))
    report.warnings.sort(key=lambda entry: first.get(entry["source"], len(files)))
    report.doc_ids[:] = [doc_id for _, doc_id in sorted(zip(stored_from, report.doc_ids, strict=False), key=lambda pair: pair[0])]


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
