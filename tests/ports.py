"""A loopback port that refuses connections for as long as a test needs it to.

Tests of "the configured server is down" used fixed ports (1, 9) and trusted that nothing listens
there. Instead, ``refused_port()`` binds a socket to a port the OS picks and never listens on it:
a connection to it is refused at once (RST), and no other process can bind the port while the
socket is held (it is bound without SO_REUSEADDR), so the verdict never depends on what else runs.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        yield holder.getsockname()[1]
