"""Replicas of Keel's server as separate processes on loopback ports, sharing the embedded Redis
Stack, Mongo-wire server and llama.cpp server of one KEEL_HOME: what the replica tests run
(`keel serve` itself) and the replica load benchmark runs (its own settings, bench/replica_load.py).
Each process writes its log to a file the caller can read (what an operator would see)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import httpx

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 300.0  # the graph and the embedding model load on a shared two-core machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def keel_env(keel_home: Path | str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a replica: the given KEEL_HOME's embedded servers, whichever URLs the
    caller's environment names otherwise dropped so that all replicas find the same ones."""
    env = dict(os.environ)
    if keel_home is not None:
        env = {k: v for k, v in env.items() if k not in ("REDIS_URL", "MONGODB_URI", "KEEL_LLM_ENDPOINT")}
        env["KEEL_HOME"] = str(keel_home)
    return {**env, **extra}


class Replica:
    """One server process: ``command`` is its argv without the port, which is appended; it is ready
    when ``health_path`` answers 200."""

    def __init__(self, name: str, command: Sequence[str], env: dict[str, str], log_path: Path,
                 health_path: str = "/healthz"):
        self.name = name
        self.health_path = health_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen([*command, str(self.port)], cwd=ROOT, env=env, stdout=log,
                                            stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica {self.name} exited:\n{self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.url}{self.health_path}", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica {self.name} did not answer within {timeout_s:.0f}s:\n{self.log()[-3000:]}")
            time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as a crash or an OOM kill would end it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def keel_serve_command(verbose: bool = False) -> list[str]:
    """`keel serve --port` (``-v``: Keel's debug log, where a follow-up's use of the cache shows)."""
    return [sys.executable, "-m", "keel.cli.main", *(["-v"] if verbose else []), "serve", "--port"]


@contextmanager
def replicas(names: Sequence[str], command: Sequence[str], env: dict[str, str], log_dir: Path) -> Iterator[dict[str, Replica]]:
    """Start one process per name at once, wait until each answers /healthz; stopped afterwards."""
    with ExitStack() as stack:
        started = {}
        for name in names:
            replica = Replica(name, command, env, log_dir / f"replica-{name}.log")
            stack.callback(replica.stop)
            started[name] = replica
        for replica in started.values():
            replica.wait_ready()
        yield started
