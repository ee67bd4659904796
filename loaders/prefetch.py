"""Files loaded and split ahead of the embedder, in worker processes, so a folder ingests at about
the speed its chunks are embedded and stored.

Reading a PDF is pure Python (pypdf) or waits on Tesseract, while embedding runs in onnxruntime's
own threads: on one core after the other they add up, side by side they overlap. With
``ingest_workers`` above one (0 = one per core) and more than one file, each worker process reads
and splits the next files while the calling process embeds and stores the current one.

- Workers are spawned fresh, not forked from a process that holds model threads and Redis sockets.
  Only file paths, the settings, the owner's ids and the password cross over. The largest files are
  read first and each comes back as soon as it is ready (the ingest report is put back in file
  order). Files in flight hold at most ``ingest_read_ahead_bytes`` together (one per worker
  whatever their size), so a long document does not stall the other workers and memory stays
  bounded.
- Loaders added with ``register_loader`` go to the workers too; when they cannot be sent (a lambda),
  files are read in the calling process as before.
- Log records of the workers are handled by the calling process's loggers, so its configuration
  (levels, files, ``-v``) applies to them as to everything else.
- A worker that dies (out of memory, a crash inside a parser) fails only its own file: the files it
  shared the pool with are read again, each alone, and the rest go on in a new pool.
"""

from __future__ import annotations

import dataclasses
import logging
import logging.handlers
import multiprocessing
import pickle
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from keel.core.machine import usable_cpus
from keel.core.settings import IngestRunSettings
from keel.loaders.prepared import PreparedDocument, prepare_document
from keel.loaders.registry import loader_for, register_loader, registered_loaders
from keel.splitters.parent_child import ParentChildSplitter

logger = logging.getLogger(__name__)
NOT_HANDED_BACK = "the process reading it could not hand its documents back (metadata that cannot be pickled?)"
WORKER_DIED = ("the process reading it stopped abruptly (out of memory, or a crash inside a parser); "
               "the file was not stored")
_LOGGERS_WORKERS_USE = ("", "keel", "loaders", "pypdf", "PIL")


def worker_count(cfg: IngestRunSettings, files: int) -> int:
    """Worker processes for ``files`` files: none (read in this process) for one file or one worker."""
    wanted = cfg.ingest_workers or usable_cpus()
    return min(wanted, files) if files > 1 and wanted > 1 else 0


def prepared_documents(
    files: list[Path],
    cfg: IngestRunSettings,
    user_id: str,
    conversation_id: str | None = None,
    password: str | None = None,
) -> Iterator[PreparedDocument]:
    """Each file loaded and split, ``position`` its index in ``files``: in order when read here, as
    soon as ready when read by workers (``worker_count``)."""
    workers = worker_count(cfg, len(files))
    extra_loaders = registered_loaders()
    if workers and not _can_send(extra_loaders):
        logger.info("a registered loader cannot be sent to worker processes: files are read here, one at a time")
        workers = 0
    if not workers:
        splitter = ParentChildSplitter.from_config(cfg)
        for position, path in enumerate(files):
            yield _placed(prepare_document(
                lambda path=path: loader_for(path, password, cfg=cfg, user_id=user_id, conversation_id=conversation_id),
                str(path), splitter,
            ), position)
        return
    yield from _WorkerPool(workers, cfg, extra_loaders, (password, user_id, conversation_id)).prepare(files)


class _WorkerPool:
    """Worker processes reading files ahead, and the listener that handles their log records here."""

    def __init__(self, workers: int, cfg: IngestRunSettings, extra_loaders: dict, owner: tuple):
        self.workers, self.extra_loaders, self.owner = workers, extra_loaders, owner
        # The workers share the CPUs: each one's OCR runs as many Tesseract processes as its share.
        ocr_workers = cfg.ocr_workers or max(1, usable_cpus() // workers)
        self.cfg = dataclasses.replace(cfg, ocr_workers=ocr_workers)
        self.context = multiprocessing.get_context("spawn")

    def prepare(self, files: list[Path]) -> Iterator[PreparedDocument]:
        records = self.context.Queue()
        listener = logging.handlers.QueueListener(records, _ToOwnLogger())
        listener.start()
        pool = self._start(records, self.workers)
        # The largest files first, each handed back as soon as it is ready: a long document does not
        # leave the other workers, or the embedder, waiting at the end.
        pending = deque(sorted(((_size(path), position, path) for position, path in enumerate(files)),
                               key=lambda item: (-item[0], item[1])))
        in_flight: dict[Future, tuple[int, int, Path]] = {}  # (size, position, path)
        try:
            while pending or in_flight:
                while pending and self._room(in_flight.values(), pending[0][0]):
                    size, position, path = pending.popleft()
                    in_flight[pool.submit(_prepare_in_worker, str(path), *self.owner)] = (size, position, path)
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                if any(isinstance(future.exception(), BrokenProcessPool) for future in done):
                    pool.shutdown(wait=False, cancel_futures=True)
                    yield from self._after_crash(records, in_flight)
                    in_flight.clear()
                    pool = self._start(records, self.workers)
                    continue
                for future in done:
                    _, position, path = in_flight.pop(future)
                    yield _placed(_result(future, path), position)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            listener.stop()
            records.close()

    def _room(self, in_flight: Iterable[tuple[int, int, Path]], size: int) -> bool:
        """Whether a file of ``size`` bytes may be read now: a worker is free, or the files in flight
        and it stay within ``cfg.ingest_read_ahead_bytes``."""
        held = [held_size for held_size, _, _ in in_flight]
        return len(held) < self.workers or sum(held) + size <= self.cfg.ingest_read_ahead_bytes

    def _after_crash(self, records: Any, in_flight: dict[Future, tuple[int, int, Path]]) -> Iterator[PreparedDocument]:
        """The files of a pool whose worker died: those it finished as they were, the others read
        again, each in a pool of its own, so only the file that kills its worker fails."""
        for future, (_, position, path) in in_flight.items():
            if future.done() and not isinstance(future.exception(), BrokenProcessPool):
                yield _placed(_result(future, path), position)
                continue
            with self._start(records, 1) as single:
                try:
                    prepared = single.submit(_prepare_in_worker, str(path), *self.owner).result()
                except BrokenProcessPool:
                    logger.warning("ingesting %s: %s", path, WORKER_DIED)
                    prepared = PreparedDocument(str(path), error=WORKER_DIED)
            yield _placed(prepared, position)

    def _start(self, records: Any, workers: int) -> ProcessPoolExecutor:
        level = min(logging.getLogger(name).getEffectiveLevel() for name in _LOGGERS_WORKERS_USE)
        return ProcessPoolExecutor(
            max_workers=workers, mp_context=self.context, initializer=_start_worker,
            initargs=(self.cfg, self.extra_loaders, records, level),
        )


class _ToOwnLogger(logging.Handler):
    """Hands a worker's log record to the logger of the same name here, if that logger wants it."""

    def handle(self, record: logging.LogRecord) -> bool:
        own = logging.getLogger(record.name)
        if own.isEnabledFor(record.levelno):
            own.handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # handle() does the work
        pass


def _result(future: Future, path: Path) -> PreparedDocument:
    """The file's prepared document, or its failure when the worker could not hand it back (the
    documents of a loader whose metadata cannot be pickled): that file fails, the ingest goes on."""
    try:
        return future.result()
    except Exception as error:  # the worker catches a loader's own errors: this is the hand-over
        logger.warning("ingesting %s: %s", path, error)
        return PreparedDocument(str(path), error=f"{NOT_HANDED_BACK}: {type(error).__name__}: {error}")


def _placed(prepared: PreparedDocument, position: int) -> PreparedDocument:
    prepared.position = position
    return prepared


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # a missing file is reported by its loader
        return 0


def _can_send(extra_loaders: dict) -> bool:
    try:
        pickle.dumps(extra_loaders)
        return True
    except Exception:  # noqa: BLE001 - lambdas, closures, local classes: read in this process
        return False


# --- inside a worker process ----------------------------------------------------------------------
_worker: dict[str, Any] = {}


def _start_worker(cfg: IngestRunSettings, extra_loaders: dict, records: Any, level: int) -> None:
    """Once per worker: its log records go to the calling process, its splitter is built."""
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(records)]
    root.setLevel(level)
    for extension, factory in extra_loaders.items():
        register_loader([extension], factory)
    _worker["cfg"] = cfg
    _worker["splitter"] = ParentChildSplitter.from_config(cfg)


def _prepare_in_worker(path: str, password: str | None, user_id: str, conversation_id: str | None) -> PreparedDocument:
    cfg = _worker["cfg"]
    return prepare_document(
        lambda: loader_for(Path(path), password, cfg=cfg, user_id=user_id, conversation_id=conversation_id),
        path, _worker["splitter"],
    )
