"""A small round-robin HTTP proxy in front of several `keel serve` replicas, as a load balancer
would stand there in a deployment: what the replica tests and the replica load benchmark talk to.

Each request goes to the next replica in turn, bodies and answers streamed through (Server-Sent
Events included), and the answer says which replica served it (``X-Served-By``). A replica that
refuses the connection (killed, not started) is skipped for that request and the next one is
tried: nothing reached it, so trying again elsewhere cannot do anything twice. A replica that dies
after taking a request is not retried here, since the proxy cannot know what it did: the client
gets a 502, or its stream is cut, and retries, as it would behind a real balancer.

Runs on uvicorn in a background thread on a loopback port (``keel.server.background.serving``).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from keel.server.background import serving

SERVED_BY = "X-Served-By"
# Hop-by-hop headers (RFC 9110 7.6.1) and those the proxy sets itself.
_NOT_FORWARDED = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                            "trailer", "transfer-encoding", "upgrade", "host", "content-length"})


class RoundRobinProxy:
    """``replicas``: name -> base URL, tried in the given order, one request each in turn."""

    def __init__(self, replicas: dict[str, str], timeout_s: float | None = None):
        self.replicas = dict(replicas)
        self.names = list(self.replicas)
        self.next_index = 0
        self.served: list[tuple[str, str]] = []  # (replica, path) of every request a replica answered
        self.skipped: list[tuple[str, str]] = []  # (replica, path) where the connection was refused
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None

    def route_next_to(self, name: str) -> None:
        """The next request starts its turn at replica ``name`` (a test's way to say where a step runs)."""
        with self._lock:
            self.next_index = self.names.index(name)

    def _turn(self) -> list[str]:
        with self._lock:
            start = self.next_index
            self.next_index = (start + 1) % len(self.names)
        return self.names[start:] + self.names[:start]

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._forward,
                                       methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])])

    async def _forward(self, request: Request) -> Response:
        if self._client is None:  # made on the server's own event loop
            self._client = httpx.AsyncClient(timeout=self.timeout_s, limits=httpx.Limits(max_connections=None))
        body = await request.body()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        for name in self._turn():
            upstream = self._client.build_request(request.method, self.replicas[name] + path, headers=headers,
                                                  content=body)
            try:
                response = await self._client.send(upstream, stream=True)
            except httpx.ConnectError:  # refused: the request never reached this replica
                self.skipped.append((name, request.url.path))
                continue
            except httpx.HTTPError:
                return PlainTextResponse(f"replica {name} failed before answering", status_code=502,
                                         headers={SERVED_BY: name})
            self.served.append((name, request.url.path))
            kept = {k: v for k, v in response.headers.items() if k.lower() not in _NOT_FORWARDED}
            return StreamingResponse(_relay(response), status_code=response.status_code,
                                     headers={**kept, SERVED_BY: name})
        return PlainTextResponse("no replica answered", status_code=502)


async def _relay(response: httpx.Response):
    """The replica's answer as it comes; if the replica dies mid-answer the error ends this stream
    and the server cuts the client's connection (an incomplete answer, never a complete-looking one)."""
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    finally:
        await response.aclose()


@contextmanager
def round_robin(replicas: dict[str, str], timeout_s: float | None = None) -> Iterator[tuple[str, RoundRobinProxy]]:
    """The proxy's base URL on a free loopback port, and the proxy; stopped when the block ends."""
    proxy = RoundRobinProxy(replicas, timeout_s)
    with serving(proxy.app()) as url:
        yield url, proxy
