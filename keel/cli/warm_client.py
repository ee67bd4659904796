"""How ``keel ask`` reaches the warm CLI service, starting it when none is running.

A command that loads the graph, the models and the store clients itself spends most of its time
starting up (imports, model files, the first call of every client), not answering. The warm
service (keel/cli/warm_service.py) keeps all of that loaded between commands; ``keel ask`` sends it
the question over a Unix socket and prints the reply exactly as it would print its own answer.

What keeps one command from being answered from another's state:

* one service per *key*: a hash of KEEL_HOME, every environment variable Keel's settings read (and
  the library ones that change models or threads), the Python interpreter, and Keel's own source
  files. A change to any of them, a new Keel version included, gets another service;
* the socket lives under KEEL_HOME/run, is created readable and writable by its owner only, and the
  service answers only a peer of its own OS user (SO_PEERCRED);
* the service builds each question's configuration from the asker's user id, as ``keel serve``
  does for its callers; it keeps no answer between commands, only loaded models and clients.

With ``KEEL_CLI_SERVICE=off``, with ``-v`` (the logs are the command's own) and with ``--docs``
(the progress bars are), the command answers by itself, as it does when no service can start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sys
from dataclasses import asdict, fields
from functools import cache
from pathlib import Path

from keel.cli.ask import AskReply, AskRequest
from keel.core.configuration import Configuration
from keel.runtime.processes import RunDirectory, ServerSpec, ServerUnavailableError, ensure_running, stop_recorded
from keel.runtime.servers import keel_home

log = logging.getLogger(__name__)

SERVICE_MODULE = "keel.cli.warm_service"
NAME_PREFIX = "cli-"
MAX_SOCKET_PATH = 107  # bytes of sun_path on Linux, its terminating NUL excluded
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a reply carries the answer, its sources and their markdown
PING_TIMEOUT_S = 2.0
# Variables outside Keel's settings that change what a process loads or how it runs.
LIBRARY_PREFIXES = ("HF_", "TRANSFORMERS_", "TOKENIZERS_", "OMP_", "MKL_", "ORT_", "CUDA_", "LD_")
_KEEL_SOURCE = Path(__file__).resolve().parents[1]
_DESIGN_FOLDERS = ("graph", "nodes", "chains", "retrievers", "loaders")


class ServiceFailure(RuntimeError):
    """The service was reached, but it stopped before it replied."""


def service_key(cfg: Configuration) -> str:
    """Names the service that may answer for this process's configuration (see the module's text)."""
    variables = {f.metadata["env"] for f in fields(Configuration) if f.metadata.get("env")}
    environment = {name: value for name, value in os.environ.items()
                   if name in variables or name.startswith("KEEL_") or name.startswith(LIBRARY_PREFIXES)}
    parts = {"home": str(keel_home(cfg)), "python": sys.executable, "code": _code_version(), "env": environment}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


@cache  # once per process: the key and the service's record both name it
def _code_version() -> str:
    """Every Keel source file's path, size and modification time: an edit or an upgrade is another key."""
    roots = [_KEEL_SOURCE] + [_KEEL_SOURCE.parent / name for name in _DESIGN_FOLDERS]
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def socket_path(cfg: Configuration, key: str) -> Path:
    return keel_home(cfg) / "run" / f"{NAME_PREFIX}{key}.sock"


def ask(request: AskRequest, cfg: Configuration) -> AskReply | None:
    """The service's answer to ``request``; None when no service can be used, and the command
    answers by itself. An error the service met answering is raised here, as the command would."""
    if cfg.cli_service == "off":
        return None
    key = service_key(cfg)
    path = socket_path(cfg, key)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        log.debug("KEEL_HOME is too deep for a Unix socket (%s): answering without the warm service", path)
        return None
    runs = RunDirectory(keel_home(cfg))
    try:
        if runs.read_state(f"{NAME_PREFIX}{key}") is None:
            _retire_outdated(runs, cfg)
        ensure_running(_spec(cfg, key, path), runs, cfg.cli_service_start_timeout_s, cfg.server_stop_timeout_s)
        connection = _connect(path, timeout_s=None)
    except (OSError, ServerUnavailableError) as error:
        log.warning("the warm CLI service could not start (%s); answering without it", error)
        return None
    with connection:
        reply = _exchange(connection, {"op": "ask", "request": asdict(request)})
    if reply.get("ok"):
        return AskReply(reply["out"], reply.get("not_saved_because"))
    raise _error_from(reply)


def _spec(cfg: Configuration, key: str, path: Path) -> ServerSpec:
    """The service as one of the embedded servers: started, recorded, reused and stopped alike."""
    return ServerSpec(
        name=f"{NAME_PREFIX}{key}",
        command=lambda _port: [sys.executable, "-m", SERVICE_MODULE, "--socket", str(path), "--key", key],
        url=lambda _port: str(path),
        health=lambda url: _ping(Path(url), key),
        settings={"key": key, "code": _code_version()},
    )


def _retire_outdated(runs: RunDirectory, cfg: Configuration) -> None:
    """Stop the services another version of Keel's code started here: after an upgrade or an edit
    nobody can reach them any more (their key is gone), and each holds its models in memory."""
    code = _code_version()
    for state_file in sorted(runs.run_dir.glob(f"{NAME_PREFIX}*.json")):
        state = runs.read_state(state_file.stem)
        if state is not None and state.settings.get("code") != code:
            _stop(state_file.stem, runs, cfg)


def _ping(path: Path, key: str) -> str | None:
    """None when the service at ``path`` answers and is the one for ``key``; else why not."""
    try:
        with _connect(path, timeout_s=PING_TIMEOUT_S) as connection:
            reply = _exchange(connection, {"op": "ping"})
    except (OSError, ServiceFailure, ValueError) as error:
        return f"not answering ({error})"
    return None if reply.get("key") == key else "another service holds the socket"


def _connect(path: Path, timeout_s: float | None) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout_s)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        raise
    return connection


def _exchange(connection: socket.socket, message: dict) -> dict:
    connection.sendall(json.dumps(message).encode() + b"\n")
    reply = read_message(connection.makefile("rb"))
    if reply is None:
        raise ServiceFailure("the warm CLI service stopped before it replied; see its log under KEEL_HOME/logs")
    return reply


def read_message(stream) -> dict | None:
    """One newline-terminated JSON object from ``stream``; None at its end. Refused past the size limit."""
    line = stream.readline(MAX_MESSAGE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_MESSAGE_BYTES or not line.endswith(b"\n"):
        raise ValueError("message too long or cut short")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def _error_from(reply: dict) -> Exception:
    """The service's error as the command would have raised it (its class where the command names
    it to the user, a RuntimeError otherwise)."""
    kinds = {"ServerUnavailableError": ServerUnavailableError, "ServerStartError": ServerUnavailableError,
             "FileNotFoundError": FileNotFoundError, "ValueError": ValueError}
    return kinds.get(str(reply.get("error")), RuntimeError)(str(reply.get("message", "the warm CLI service failed")))


def running_services(cfg: Configuration) -> list[int]:
    """Process ids of the warm CLI services running under KEEL_HOME."""
    from keel.runtime.processes import is_alive

    runs = RunDirectory(keel_home(cfg))
    states = [runs.read_state(path.stem) for path in sorted(runs.run_dir.glob(f"{NAME_PREFIX}*.json"))]
    return [state.pid for state in states if state is not None and is_alive(state)]


def stop_all(cfg: Configuration) -> list[str]:
    """Stop every warm CLI service recorded under KEEL_HOME (``keel servers stop``)."""
    runs = RunDirectory(keel_home(cfg))
    return [state_file.stem for state_file in sorted(runs.run_dir.glob(f"{NAME_PREFIX}*.json"))
            if _stop(state_file.stem, runs, cfg)]


def _stop(name: str, runs: RunDirectory, cfg: Configuration) -> bool:
    """Stop one recorded service and remove its socket; True when it was running."""
    was_running = stop_recorded(name, runs, cfg.server_stop_timeout_s)
    (runs.run_dir / f"{name}.sock").unlink(missing_ok=True)
    return was_running
