"""Stopping a generation whose request is over.

The server runs the graph's nodes in worker threads; cancelling the request's asyncio task does
not stop a thread that is pulling tokens from the model, so an abandoned answer (client gone, time
limit passed) would go on occupying the model server while its generation slot was already given
to the next request. The server's gate therefore hands every request a ``CancelToken`` through a
context variable (asyncio tasks and LangGraph's / LangChain's executor threads copy the context),
and every model call here checks it:

- a streamed call (``guard_stream``) checks between chunks and, once the request is over, closes
  the stream (which closes the HTTP connection, so the model server stops generating) and raises
  ``GenerationCancelled``;
- a call that does not stream checks before it starts (``check_cancelled``).

``GenerationCancelled`` is not a model failure: nothing retries it or turns it into an answer; it
ends the run. The token also counts the model calls still running, so the gate can keep the slot
until they have really stopped (``CancelToken.stopped``).

Outside a served request there is no token, and all of this does nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TypeVar

Chunk = TypeVar("Chunk")


class GenerationCancelled(Exception):
    """The request this generation was for is over (its client left or its time ran out)."""


class CancelToken:
    """One request's stop signal (``cancelled``) and the count of its model calls still running."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._running = 0
        self._waiters: list[asyncio.Future] = []

    @property
    def running(self) -> int:
        """Model calls of this request that have not yet returned."""
        with self._lock:
            return self._running

    def cancel(self) -> None:
        """From now on no model call of this request starts, and running ones stop at their next chunk."""
        with self._lock:
            self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise GenerationCancelled("the request was cancelled")

    @contextmanager
    def model_call(self) -> Iterator[None]:
        """Count one model call while it runs; refuse to start one once cancelled. The check and the
        count are one step, so after ``cancel`` the count only goes down."""
        with self._lock:
            if self.cancelled.is_set():
                raise GenerationCancelled("the request was cancelled")
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                waiters = self._waiters if self._running == 0 else []
                if waiters:
                    self._waiters = []
            for waiter in waiters:
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    async def stopped(self, timeout_s: float) -> bool:
        """Wait until no model call of this request runs; False if one still runs after ``timeout_s``."""
        with self._lock:
            if self._running == 0:
                return True
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, max(0.0, timeout_s))
            return True
        except TimeoutError:
            return False
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(True)


_current: ContextVar[CancelToken | None] = ContextVar("keel_cancel_token", default=None)


def bind(token: CancelToken) -> Token:
    """Make ``token`` the current request's; tasks and threads started from here on inherit it."""
    return _current.set(token)


def unbind(reset: Token) -> None:
    """Undo ``bind``: the request's cancel token is no longer current."""
    _current.reset(reset)


def current_token() -> CancelToken | None:
    """The cancel token of the request being served here, or None outside one."""
    return _current.get()


def is_cancelled() -> bool:
    """Is the current request over? (False outside a served request.)"""
    token = _current.get()
    return token is not None and token.cancelled.is_set()


def check_cancelled() -> None:
    """Raise ``GenerationCancelled`` if the current request is over; for calls that do not stream."""
    token = _current.get()
    if token is not None:
        token.check()


def guard_stream(chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """``chunks`` while the current request lives; once it is over, the stream is closed and
    ``GenerationCancelled`` raised at the next chunk. The call counts as running until it ends."""
    token = _current.get()
    if token is None:
        yield from chunks
        return
    with token.model_call():
        try:
            for chunk in chunks:
                token.check()
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
