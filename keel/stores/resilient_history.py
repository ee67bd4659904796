"""A checkpointer that survives a MongoDB outage without losing the answer.

LangGraph saves a conversation turn by turn through its checkpointer. When MongoDB goes away in
the middle of an answer, a plain saver raises and the whole run fails: the answer already
generated is lost and the conversation keeps the question without it. This wrapper retries a
failed save with bounded backoff (reconnecting, which restarts Keel's own embedded server), and
when MongoDB stays down it keeps the unsaved writes in order and lets the run finish. They are
written, in order, as soon as MongoDB answers again (the next save or read, or ``flush()``);
``pending`` says how many are waiting and ``last_error`` why, so the caller can warn that the
conversation was not saved. Reads cannot be answered from memory: they retry, then raise a
``HistoryUnavailableError`` naming the server.

One saver serves every user of a process, so an outage must not stall them all: the lock that
keeps the queue in order is held only while talking to MongoDB, never during a backoff pause, and
the queue is bounded (``max_pending``): past it a new write is refused with the same error rather
than growing memory without limit while MongoDB stays away.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from keel.runtime.processes import ServerUnavailableError

log = logging.getLogger(__name__)


class HistoryUnavailableError(ServerUnavailableError):
    """The conversation store could not be reached within the retry budget; names the server."""


def connection_errors() -> tuple[type[BaseException], ...]:
    """What counts as "the server is away" (retried), as opposed to a bad request (raised at once)."""
    from pymongo.errors import ConnectionFailure

    return (ConnectionFailure, ServerUnavailableError, ConnectionError, TimeoutError)


@dataclass
class _Outage:
    """What every copy of one saver shares (LangGraph clones a checkpointer per graph and subgraph):
    the queued writes in order, the lock that keeps them in order, and the last failure."""

    pending: list[tuple[str, tuple, dict]] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    failed_at: float | None = None
    last_error: BaseException | None = None


class ResilientCheckpointSaver(BaseCheckpointSaver):
    """Delegates to the saver ``connect()`` returns; retries on connection failures, queues writes.

    ``where`` names the server in messages (a URL without password). ``attempts`` tries per
    operation, ``backoff_s`` the first pause (doubled each time); while writes are queued, a new
    write only tries again when ``retry_interval_s`` has passed since the last failed try, so a
    run does not wait the whole retry budget at every step of the graph. At most ``max_pending``
    writes wait in memory.
    """

    def __init__(
        self,
        connect: Callable[[], BaseCheckpointSaver],
        *,
        where: str,
        attempts: int = 3,
        backoff_s: float = 0.5,
        retry_interval_s: float = 10.0,
        max_pending: int = 10_000,
        saver: BaseCheckpointSaver | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self._connect = connect
        self._saver = saver if saver is not None else connect()
        super().__init__(serde=self._saver.serde)
        self.where = where
        self.attempts = max(1, int(attempts))
        self.backoff_s = max(0.0, float(backoff_s))
        self.retry_interval_s = max(0.0, float(retry_interval_s))
        self.max_pending = max(1, int(max_pending))
        self._sleep = sleep
        self._outage = _Outage()
        self._allowlist: Collection[tuple[str, ...]] | None = None

    @property
    def _pending(self) -> list[tuple[str, tuple, dict]]:
        return self._outage.pending

    @property
    def _lock(self) -> threading.RLock:
        return self._outage.lock

    @property
    def last_error(self) -> BaseException | None:
        return self._outage.last_error

    # --- state a caller can show -----------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Writes waiting for the store to come back (0: everything is saved)."""
        return len(self._pending)

    def describe_failure(self) -> str:
        """One line for a warning: which server, and what went wrong last."""
        reason = f" ({type(self.last_error).__name__}: {_short(self.last_error)})" if self.last_error else ""
        return f"MongoDB at {self.where} is unavailable{reason}"

    def flush(self, attempts: int | None = None) -> bool:
        """Write the queued writes now (``attempts`` tries, default one); True when none is left."""
        if not self._pending:
            return True
        try:
            self._retrying(self._drain, attempts or 1, locked=True)
        except HistoryUnavailableError:
            return False
        return not self._pending

    # --- the retry loop ----------------------------------------------------------------------------

    def _retrying(self, operation: Callable[[], Any], attempts: int | None = None, locked: bool = False) -> Any:
        """``operation`` until it works, ``attempts`` tries; with ``locked`` each try holds the
        queue's lock, which is let go during the pauses so other users' saves are not stalled."""
        errors = connection_errors()
        tries = attempts or self.attempts
        for attempt in range(1, tries + 1):
            try:
                if locked:
                    with self._lock:
                        result = operation()
                else:
                    result = operation()
            except errors as error:
                self._outage.last_error, self._outage.failed_at = error, time.monotonic()
                log.warning("conversation store at %s failed (try %d of %d): %s", self.where, attempt, tries,
                            _short(error))
                if attempt == tries:
                    raise HistoryUnavailableError(self.describe_failure()) from error
                self._sleep(self.backoff_s * 2 ** (attempt - 1))
                self._reconnect()
                continue
            self._outage.failed_at = None
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _reconnect(self) -> None:
        """A fresh saver (an embedded server that died is restarted); the old one when it fails."""
        try:
            saver = self._connect()
        except connection_errors() as error:
            self._outage.last_error = error
            return
        self._saver = saver if self._allowlist is None else saver.with_allowlist(self._allowlist)

    def _drain(self) -> None:
        while self._pending:
            name, args, kwargs = self._pending[0]
            getattr(self._saver, name)(*args, **kwargs)
            self._pending.pop(0)

    def _write(self, name: str, args: tuple, kwargs: dict) -> None:
        with self._lock:
            if len(self._pending) >= self.max_pending:
                raise HistoryUnavailableError(f"{self.describe_failure()}; {len(self._pending)} conversation "
                                              "writes already wait for it, so no more are kept")
            self._pending.append((name, args, kwargs))
            queued = len(self._pending)
            failed_at = self._outage.failed_at
            recently_failed = failed_at is not None and time.monotonic() - failed_at < self.retry_interval_s
        if queued > 1 and recently_failed:
            return  # the store was down a moment ago: queue behind the others
        try:
            self._retrying(self._drain, 1 if queued > 1 else None, locked=True)
        except HistoryUnavailableError:
            log.warning("%s; %d conversation write(s) kept until it is back", self.describe_failure(),
                        len(self._pending))

    def _read(self, operation: Callable[[], Any]) -> Any:
        if self._pending:  # a read must see the queued writes: write them first
            self._retrying(self._drain, locked=True)
        return self._retrying(operation)

    # --- BaseCheckpointSaver ----------------------------------------------------------------------

    @property
    def config_specs(self) -> list:
        return self._saver.config_specs

    def get_next_version(self, current: Any, channel: Any = None) -> Any:
        return self._saver.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> ResilientCheckpointSaver:
        """LangGraph's per-graph copy with a deserialization allowlist; it shares the queue."""
        saver = self._saver.with_allowlist(extra_allowlist)
        if saver is self._saver:
            return self
        clone = copy.copy(self)
        clone._saver, clone._allowlist, clone.serde = saver, extra_allowlist, saver.serde
        return clone

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._read(lambda: self._saver.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._read(lambda: list(self._saver.list(config, filter=filter, before=before, limit=limit)))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._write("put", (config, checkpoint, metadata, new_versions), {})
        configurable = config["configurable"]
        return {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._write("put_writes", (config, list(writes), task_id, task_path), {})

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._pending[:] = [p for p in self._pending if _thread_of(p) != thread_id]
        self._retrying(lambda: self._saver.delete_thread(thread_id))

    # async: the same logic in a worker thread (the MongoDB saver is synchronous underneath)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await _in_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await _in_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await _in_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await _in_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await _in_thread(self.delete_thread, thread_id)


async def _in_thread(function: Callable, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, partial(function, *args))


def _thread_of(write: tuple[str, tuple, dict]) -> str | None:
    config = write[1][0] if write[1] else {}
    return (config or {}).get("configurable", {}).get("thread_id")


def _short(error: BaseException | None) -> str:
    """An exception's first line without pymongo's long topology description."""
    text = str(error).split(", Timeout:")[0].splitlines()
    return text[0][:200] if text else ""
