"""Run the app on a real HTTP server in a background thread, on a free loopback port: what the
attack tests and the serving benchmark talk to, exactly as clients talk to ``keel serve``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from keel.server.binding import is_loopback

START_TIMEOUT_S = 30.0


@contextmanager
def serving(app, host: str = "127.0.0.1") -> Iterator[str]:
    """Yield the base URL of ``app`` served by uvicorn on ``host`` (loopback only) and a port the
    kernel picked; the server is stopped when the block ends."""
    import uvicorn

    if not is_loopback(host):
        raise ValueError("background servers are for loopback only")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="keel-serve")
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the background server did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_S)
        sock.close()
