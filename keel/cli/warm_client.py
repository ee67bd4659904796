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

``keel chat`` streams each turn from the same service (``ServiceChat``). With
``KEEL_CLI_SERVICE=off``, with ``-v`` (the logs are the command's own) and with ``--docs`` (the
progress bars are), the command answers by itself, as it does when no service can start.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
from dataclasses import asdict
from pathlib import Path

from keel.cli import running
from keel.cli.ask import AskReply, AskRequest
from keel.cli.warm_protocol import (
    HOME_VARIABLE,
    MAX_SOCKET_PATH,
    NAME_PREFIX,
    STOPPED_MESSAGE,
    code_version,
    connect,
    home,
    read_message,
    send_message,
    service_key,
    socket_path,
)
from keel.core.configuration import Configuration
from keel.runtime.processes import (
    RunDirectory,
    ServerSpec,
    ServerUnavailableError,
    ensure_running,
    stop_recorded,
)
from keel.runtime.servers import keel_home

log = logging.getLogger(__name__)

SERVICE_MODULE = "keel.cli.warm_service"
PING_TIMEOUT_S = 2.0


class ServiceFailure(RuntimeError):
    """The service was reached, but it stopped before it replied."""


def ask(request: AskRequest, cfg: Configuration) -> AskReply | None:
    """The service's answer to ``request``; None when no service can be used, and the command
    answers by itself. An error the service met answering is raised here, as the command would."""
    connection = _connected(cfg)
    if connection is None:
        return None
    with connection:
        reply = _exchange(connection, {"op": "ask", "request": asdict(request)})
    if reply.get("ok"):
        return AskReply(reply["out"], reply.get("not_saved_because"), reply.get("hint"))
    raise _error_from(reply)


class ServiceChat:
    """Keel's graph as ``keel chat`` streams it (keel/cli/chat.py), each turn run by the warm
    service: the answer loop's custom events as they come, then the final answer's printed keys as
    the last values. Ctrl-C closes the turn's connection, which stops the answer there. A turn after
    the service exited (idle while the chat waited) starts it again; when it cannot start, the turn
    runs here."""

    def __init__(self, cfg: Configuration):
        self.cfg = cfg
        self._own_graph = None

    def stream(self, graph_input: dict, config: dict, stream_mode=None, subgraphs: bool = False):
        connection = _connected(self.cfg)
        if connection is None:
            if self._own_graph is None:
                self._own_graph = running.graph_with_history(self.cfg)
            yield from self._own_graph.stream(graph_input, config, stream_mode=stream_mode, subgraphs=subgraphs)
            return
        configurable = config["configurable"]
        request = AskRequest(graph_input["messages"][-1][1], configurable["user_id"], configurable["thread_id"],
                             configurable.get("grounding_mode"), configurable.get("answer_format"),
                             chat_model=configurable.get("chat_model"))
        with connection:
            connection.sendall(json.dumps({"op": "chat", "request": asdict(request)}).encode() + b"\n")
            with connection.makefile("rb") as replies:
                while True:
                    message = read_message(replies)
                    if message is None:
                        raise ServiceFailure(STOPPED_MESSAGE)
                    if "custom" in message:
                        yield (), "custom", message["custom"]
                    elif message.get("ok"):
                        if message.get("final") is not None:
                            yield (), "values", message["final"]
                        return
                    else:
                        raise _error_from(message)


def chat_graph(cfg: Configuration) -> ServiceChat | None:
    """The warm service as ``keel chat``'s graph; None when no service can be used."""
    return None if _running_service(cfg) is None else ServiceChat(cfg)


def _connected(cfg: Configuration) -> socket.socket | None:
    """A connection to the service for this environment (started when none runs); None when it is
    off, cannot start, or went away before it could be reached."""
    path = _running_service(cfg)
    if path is None:
        return None
    try:
        return connect(path, timeout_s=None)
    except OSError as error:
        log.warning("the warm CLI service could not be reached (%s); answering without it", error)
        return None


def _running_service(cfg: Configuration) -> Path | None:
    """The socket of the service for this environment, started when none runs; None when it is off
    or cannot start (the command then does the work itself)."""
    if cfg.cli_service == "off":
        return None
    key = service_key()
    path = socket_path(key)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        log.debug("KEEL_HOME is too deep for a Unix socket (%s): answering without the warm service", path)
        return None
    runs = RunDirectory(keel_home(cfg))
    try:
        if runs.read_state(f"{NAME_PREFIX}{key}") is None:
            _retire_outdated(runs, cfg)
        ensure_running(_spec(cfg, key, path), runs, cfg.cli_service_start_timeout_s, cfg.server_stop_timeout_s)
    except (OSError, ServerUnavailableError) as error:
        log.warning("the warm CLI service could not start (%s); answering without it", error)
        return None
    return path


def _spec(cfg: Configuration, key: str, path: Path) -> ServerSpec:
    """The service as one of the embedded servers: started, recorded, reused and stopped alike."""
    return ServerSpec(
        name=f"{NAME_PREFIX}{key}",
        command=lambda _port: [sys.executable, "-m", SERVICE_MODULE, "--socket", str(path), "--key", key],
        url=lambda _port: str(path),
        health=lambda url: _ping(Path(url), key),
        settings={"key": key, "code": code_version()},
        # The service runs in KEEL_HOME: a relative KEEL_HOME would name another folder there.
        env={HOME_VARIABLE: str(home())},
    )


def _retire_outdated(runs: RunDirectory, cfg: Configuration) -> None:
    """Stop the services another version of Keel's code started here: after an upgrade or an edit
    nobody can reach them any more (their key is gone), and each holds its models in memory."""
    code = code_version()
    for state_file in sorted(runs.run_dir.glob(f"{NAME_PREFIX}*.json")):
        state = runs.read_state(state_file.stem)
        if state is not None and state.settings.get("code") != code:
            _stop(state_file.stem, runs, cfg)


def _ping(path: Path, key: str) -> str | None:
    """None when the service at ``path`` answers and is the one for ``key``; else why not."""
    try:
        with connect(path, timeout_s=PING_TIMEOUT_S) as connection:
            reply = _exchange(connection, {"op": "ping"})
    except (OSError, ServiceFailure, ValueError) as error:
        return f"not answering ({error})"
    return None if reply.get("key") == key else "another service holds the socket"


def _exchange(connection, message: dict) -> dict:
    reply = send_message(connection, message)
    if reply is None:
        raise ServiceFailure(STOPPED_MESSAGE)
    return reply


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
