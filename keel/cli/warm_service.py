"""The warm CLI service: Keel's graph, models and store clients loaded once, answering the
``keel ask`` commands of one OS user over a Unix socket (keel/cli/warm_client.py starts it and
says who may use which). It exits after ``cli_service_idle_s`` without a question.

    python -m keel.cli.warm_service --socket PATH --key KEY

Messages are one JSON object per line: ``{"op": "ping"}`` answers the service's key;
``{"op": "command", "argv": [...]}`` runs a ``keel ask`` command line as the command would and
answers with what it prints on each stream and its exit code (keel/cli/entry.py), or
``{"fallback": true}`` for a command line the command must run itself; ``{"op": "ask", "request":
{...}}`` answers with the object ``keel ask --json`` prints (keel/cli/ask.py), or the error the
command would have shown. When the asker leaves before the reply (Ctrl-C), its answer is stopped at
the model's next step.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import select
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

from keel.cli import running
from keel.cli.ask import AskRequest, Printed, answer, checked_request, printed
from keel.cli.chat import chat_modes
from keel.cli.logs import configure_logging
from keel.cli.main import command_parser
from keel.cli.running import question_problem
from keel.cli.warm_protocol import read_message, same_user, service_key
from keel.core.configuration import Configuration
from keel.models.cancellation import CancelToken, GenerationCancelled, bind, unbind

log = logging.getLogger(__name__)

IDLE_CHECK_INTERVAL_S = 5.0
LEFT_CHECK_INTERVAL_S = 0.2  # how soon an answer stops after its asker left


DEFAULT_OPTIONS = (None, None, None)  # a request's grounding mode, answer format and chat model, none given


class WarmService(socketserver.ThreadingUnixStreamServer):
    """The warm `keel` service: a Unix socket server that keeps models, stores and graphs loaded
    between commands of the same setup."""
    daemon_threads = True

    def __init__(self, path: Path, key: str, cfg: Configuration):
        self.key, self.cfg = key, cfg
        self.active, self.last_question = 0, time.monotonic()
        self._graphs: dict[tuple, object] = {}
        self._lock = threading.Lock()
        path.unlink(missing_ok=True)  # a crashed instance's socket (the caller holds the start lock)
        previous = os.umask(0o177)  # the socket is its owner's alone: srw-------
        try:
            super().__init__(str(path), Handler)
        finally:
            os.umask(previous)

    def keep_graph(self, options: tuple, graph) -> None:
        with self._lock:
            self._graphs[options] = graph

    def graph_for(self, request: AskRequest):
        """One graph per option set; users share it, as they share ``keel serve``'s."""
        options = (request.grounding_mode, request.answer_format, request.chat_model)
        with self._lock:
            if options not in self._graphs:
                self._graphs[options] = running.graph_with_history(request.configuration())
            return self._graphs[options]

    def started_question(self) -> None:
        with self._lock:
            self.active += 1

    def finished_question(self) -> None:
        with self._lock:
            self.active -= 1
            self.last_question = time.monotonic()

    def idle_for(self) -> float:
        with self._lock:
            return 0.0 if self.active else time.monotonic() - self.last_question


class Handler(socketserver.StreamRequestHandler):
    """One `keel` command sent to the warm service: run, its output streamed back."""
    server: WarmService

    def handle(self) -> None:
        if not same_user(self.request):
            log.warning("refused a connection from another OS user")
            return
        try:
            message = read_message(self.rfile)
        except ValueError as error:
            self._reply({"ok": False, "error": "ValueError", "message": f"bad message: {error}"})
            return
        if message is None:
            return
        if message.get("op") == "ping":
            self._reply({"ok": True, "key": self.server.key, "pid": os.getpid()})
        elif message.get("op") == "ask":
            self._ask(message.get("request"))
        elif message.get("op") == "command":
            self._command(message.get("argv"))
        elif message.get("op") == "chat":
            self._chat(message.get("request"))
        else:
            self._reply({"ok": False, "error": "ValueError", "message": "unknown op"})

    def _ask(self, fields_given) -> None:
        request = self._checked(fields_given)
        if request is None:
            return
        try:
            with self._question():
                reply = answer(request, self.server.graph_for(request))
        except GenerationCancelled:
            return
        except Exception as error:  # the command shows it as it would its own
            self._failed(error, "a question")
            return
        self._reply({"ok": True, "out": reply.out, "not_saved_because": reply.not_saved_because, "hint": reply.hint})

    def _command(self, argv) -> None:
        """A ``keel ask`` command line, parsed and answered as ``keel.cli.main`` would."""
        if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
            self._reply({"ok": False, "error": "ValueError", "message": "argv is a list of text"})
            return
        try:
            args = _parser().parse_args(argv)
            if args.command != "ask" or args.docs or args.verbose:
                self._reply({"ok": True, "fallback": True})
                return
            request = checked_request(args, args.conversation or uuid.uuid4().hex)
            with self._question():
                shown = printed(answer(request, self.server.graph_for(request)), args.json)
        except _ParserExit as stop:
            shown = Printed(stop.stdout, stop.message, stop.status)
        except GenerationCancelled:
            return
        except Exception as error:  # the one-line error keel.cli.main prints; the traceback in this log
            log.exception("a command failed")
            shown = Printed("", f"keel: error: {error}\n", 1)
        self._reply({"ok": True, "stdout": shown.stdout, "stderr": shown.stderr, "exit": shown.exit_code})

    def _chat(self, fields_given) -> None:
        """One ``keel chat`` turn: the answer loop's custom events as they come, then the final
        answer's printed keys (``running.printed_state``)."""
        request = self._checked(fields_given)
        if request is None:
            return
        final = None
        try:
            with self._question():
                graph, cfg = self.server.graph_for(request), request.configuration()
                for mode, payload in chat_modes(graph, request.question.strip(),
                                                running.run_config(cfg, request.conversation)):
                    if mode == "custom" and isinstance(payload, dict):
                        self._reply({"custom": payload})
                    elif mode == "values":
                        final = payload
        except GenerationCancelled:
            return
        except Exception as error:  # the command shows it as it would its own
            self._failed(error, "a chat turn")
            return
        self._reply({"ok": True, "final": None if final is None else running.printed_state(final)})

    def _checked(self, fields_given) -> AskRequest | None:
        """The request, or None once the refusal naming its problem is sent."""
        try:
            return _request(fields_given, self.server.cfg)
        except (TypeError, ValueError) as error:
            self._reply({"ok": False, "error": "ValueError", "message": str(error)})
            return None

    @contextmanager
    def _question(self) -> Iterator[None]:
        """One question: the service is not idle while it runs, and it stops when its asker leaves."""
        self.server.started_question()
        try:
            with _stopped_when_asker_leaves(self.request):
                yield
        finally:
            self.server.finished_question()

    def _failed(self, error: Exception, what: str) -> None:
        log.exception("%s failed", what)
        self._reply({"ok": False, "error": type(error).__name__, "message": str(error)})

    def _reply(self, message: dict) -> None:
        try:
            self.wfile.write(json.dumps(message, ensure_ascii=False, default=str).encode() + b"\n")
        except OSError:
            log.info("the command left before its reply")


class _ParserExit(Exception):
    def __init__(self, status: int, message: str, stdout: str = ""):
        super().__init__(message)
        self.status, self.message, self.stdout = status, message, stdout


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The command's parser, built once: some ninety arguments are not rebuilt for every question
    (parsing leaves the parser as it was, so the service's threads share it)."""
    return command_parser(_ReportingParser)


class _ReportingParser(argparse.ArgumentParser):
    """The command's parser, reporting what it would print and its exit status instead of exiting."""

    def exit(self, status: int = 0, message: str | None = None):
        raise _ParserExit(status, message or "")

    def error(self, message: str):
        raise _ParserExit(2, f"{self.format_usage()}{self.prog}: error: {message}\n")

    def print_help(self, file=None):  # --help: the help on stdout, exit 0
        raise _ParserExit(0, "", stdout=self.format_help())


@contextmanager
def _stopped_when_asker_leaves(connection: socket.socket) -> Iterator[None]:
    """The answer's model calls stop once the asker has closed its connection (Ctrl-C)."""
    token = CancelToken()
    finished = threading.Event()

    def watch() -> None:
        while not finished.is_set():
            try:
                readable, _, _ = select.select([connection], [], [], LEFT_CHECK_INTERVAL_S)
                left = bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
            except (OSError, ValueError):  # closed: the reply was sent, or the asker is gone
                left = True
            if finished.is_set():
                return
            if readable or left:
                if left:
                    log.info("the asker left: its answer is stopped")
                    token.cancel()
                return  # left, or sent more than its one message: nothing more to watch

    watcher = threading.Thread(target=watch, daemon=True)
    reset = bind(token)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        unbind(reset)


def _request(given, cfg: Configuration) -> AskRequest:
    """The request, checked as the command checks its arguments."""
    if not isinstance(given, dict):
        raise ValueError("the request is a JSON object")
    names = {f.name for f in fields(AskRequest)}
    unknown = sorted(set(given) - names)
    if unknown:
        raise ValueError(f"unknown request fields {unknown}")
    request = AskRequest(**{**given, "doc_ids": tuple(given.get("doc_ids") or ())})
    if not all(isinstance(getattr(request, name), str) for name in ("question", "user_id", "conversation")):
        raise ValueError("question, user_id and conversation are text")
    problem = question_problem(request.question, cfg.max_question_chars)
    if problem:
        raise ValueError(problem)
    request.configuration()  # the user id and options, checked like any other settings
    return request


def warm_up(cfg: Configuration):
    """Load now what the first question would otherwise wait for: the servers, the graph and the
    models it reads on every turn. Returns the graph, for the questions with the default options."""
    from keel.components import Components
    from keel.runtime import servers

    servers.redis_url(cfg)
    servers.mongodb_uri(cfg)
    if servers.configured_llm_endpoint(cfg) or cfg.chat_runtime != "transformers":
        servers.llm_endpoint(cfg)
    graph = running.graph_with_history(cfg)
    components = Components()  # its factories keep what they load per process: the graph's find it
    components.embedder(cfg).embed_query("warm-up")
    components.count_tokens(cfg, "warm-up")
    # A sentence long enough to be judged by language: the language detector loads now too.
    components.moderation(cfg).check("Warm-up question, loading the moderation models before the first one.")
    components.chat(cfg)
    _parser()
    return graph


def _exit_when_idle(service: WarmService, idle_s: float) -> None:
    while True:
        time.sleep(IDLE_CHECK_INTERVAL_S)
        if service.idle_for() >= idle_s:
            log.info("no question for %.0f s: the warm CLI service exits", idle_s)
            service.shutdown()
            return


def main(argv: list[str] | None = None) -> int:
    """Start the warm service on ``--socket`` for the setup ``--key`` names (refused for another setup)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    configure_logging(0)
    cfg = Configuration()
    if service_key() != args.key:
        print("keel warm service: this environment is not the one the key names", file=sys.stderr)
        return 2
    graph = warm_up(cfg)
    service = WarmService(args.socket, args.key, cfg)
    service.keep_graph(DEFAULT_OPTIONS, graph)  # the first question does not build another
    threading.Thread(target=_exit_when_idle, args=(service, cfg.cli_service_idle_s), daemon=True).start()
    try:
        service.serve_forever()
    finally:
        service.server_close()
        args.socket.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
