"""The ``keel`` command: ingest, ask, chat, serve, servers, models, users, review, eval, demo.

Results go to stdout (one JSON object with --json); logs and progress bars go to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from keel.cli import running, warm_client
from keel.cli.ask import answer, checked_request, printed
from keel.cli.chat import chat_loop
from keel.cli.demo import run_demo
from keel.cli.eval_cmd import add_eval_parser
from keel.cli.logs import configure_logging
from keel.cli.models import add_models_parser
from keel.cli.review import add_review_parser
from keel.cli.users import add_users_parser
from keel.core.configuration import Configuration
from keel.runtime import servers
from keel.runtime.model_install import ModelInstallError
from keel.runtime.model_pool import POOL

# A command imports what it runs (the graph, the stores, the server) inside its handler, so that
# `keel --help` and `keel users` start without loading LangGraph, a model or a store client.
log = logging.getLogger("keel")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `keel` command in this process: a clear one-line error, the traceback with --verbose."""
    args = command_parser().parse_args(argv)
    configure_logging(args.verbose)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # a clear one-line error, the traceback only with --verbose
        expected = (servers.ServerUnavailableError, FileNotFoundError, ValueError, ModelInstallError)
        if args.verbose or not isinstance(error, expected):
            log.exception("keel %s failed", args.command)
        print(f"keel: error: {error}", file=sys.stderr)
        return 1


def command_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``keel`` command line; the warm CLI service parses with it too (with its own
    ``parser_class``, which reports instead of exiting), so an option means the same either way."""
    parser = parser_class(prog="keel", description="Grounded, cited answers from your documents.")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="Keel's debug logs on stderr; -vv: the libraries' too")
    commands = parser.add_subparsers(dest="command", required=True)

    def who(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--user", default="default", help="whose documents (default: %(default)s)")
        sub.add_argument("--conversation", default=None, help="conversation id (default: a new one)")

    ingest = commands.add_parser("ingest", help="add files or folders to the user's documents")
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.add_argument("--password", default=None, help="password for encrypted PDFs")
    ingest.add_argument("--json", action="store_true", help="print one JSON object")
    who(ingest)
    ingest.set_defaults(handler=_cmd_ingest)

    ask = commands.add_parser("ask", help="answer one question from the user's documents")
    ask.add_argument("question")
    ask.add_argument("--docs", nargs="+", type=Path, default=[], help="ingest these first and ask about them")
    ask.add_argument("--grounding", choices=["strict", "open"], default=None,
                     help="strict: only the documents (default); open: general questions answered, marked as such")
    ask.add_argument("--answer-format", choices=["plain", "sectioned"], default=None,
                     help="sectioned: [CITATION] / [ANSWER] / [EXPLANATION], parsed into `sections`")
    ask.add_argument("--model", choices=list(POOL), default=None,
                     help="the pool model that answers (default: chat_model, KEEL_CHAT_MODEL); see `keel models list`")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    who(ask)
    ask.set_defaults(handler=_cmd_ask, usage_error=ask.error)

    chat = commands.add_parser("chat", help="interactive conversation, answers streamed")
    chat.add_argument("--grounding", choices=["strict", "open"], default=None)
    chat.add_argument("--model", choices=list(POOL), default=None, help="the pool model that answers")
    who(chat)
    chat.set_defaults(handler=_cmd_chat)

    serve = commands.add_parser("serve", help="run the LangServe app (/chat); callers need an API key")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-auth", action="store_true",
                       help="development only: no API keys, the request names the user; loopback hosts only")
    serve.set_defaults(handler=_cmd_serve)

    servers = commands.add_parser("servers", help="the embedded Redis Stack, MongoDB and model servers")
    servers.add_argument("action", choices=["status", "stop", "start"])
    servers.set_defaults(handler=_cmd_servers)

    add_users_parser(commands)
    add_review_parser(commands)
    add_models_parser(commands)

    add_eval_parser(commands)

    demo = commands.add_parser("demo", help="ingest the bundled samples and answer a sample question")
    demo.add_argument("--json", action="store_true")
    demo.set_defaults(handler=_cmd_demo)
    return parser


def _config(args: argparse.Namespace, **overrides) -> Configuration:
    chosen = {key: value for key, value in overrides.items() if value is not None}
    return Configuration(user_id=getattr(args, "user", "default"), **chosen)  # checked like any other


def _cmd_ingest(args: argparse.Namespace) -> int:
    cfg = _config(args)
    report = running.ingest_paths(args.paths, cfg, args.conversation, args.password, progress=True)
    summary = {
        "documents": report.documents,
        "parents": report.parents,
        "children": report.children,
        "seconds": round(report.seconds, 3),
        "errors": report.errors,
        "doc_ids": report.doc_ids,
        "warnings": report.warnings,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(ingest_summary_line(report))
        for error in report.errors:
            print(f"  skipped {error['source']}: {error['error']}")
        for warning in report.warnings:
            print(f"  warning {warning['source']}: {warning['warning']}")
    return 1 if (report.errors and not report.documents) or report.store_unavailable else 0


def ingest_summary_line(report) -> str:
    """The ingest report's first line: documents stored (a byte-identical copy under another name is
    one document, as the web page counts it), skipped files and warnings, and the time taken."""
    distinct = len(dict.fromkeys(report.doc_ids))
    copies = report.documents - distinct
    counts = [f"{len(report.errors)} skipped", f"{len(report.warnings)} warning(s)"]
    if copies > 0:
        counts.insert(0, f"{copies} a copy of another")
    return (f"ingested {distinct if report.doc_ids else report.documents} document(s) ({', '.join(counts)}): "
            f"{report.parents} parents, {report.children} children in {report.seconds:.1f}s")


def _cmd_ask(args: argparse.Namespace) -> int:
    conversation = args.conversation or uuid.uuid4().hex
    request = checked_request(args, conversation)
    cfg = request.configuration()
    if args.docs:
        report = running.ingest_paths(args.docs, cfg, conversation, progress=not args.json)
        request = replace(request, doc_ids=tuple(report.doc_ids))
        for error in report.errors:
            print(f"keel: skipped {error['source']}: {error['error']}", file=sys.stderr)
    # -v wants this process's own logs, --docs has just loaded the models here: answer here then
    reply = None if (args.verbose or args.docs) else warm_client.ask(request, cfg)
    shown = printed(reply or answer(request), args.json)
    sys.stdout.write(shown.stdout)
    sys.stdout.flush()
    sys.stderr.write(shown.stderr)
    return shown.exit_code


def _cmd_chat(args: argparse.Namespace) -> int:
    cfg = _config(args, grounding_mode=args.grounding, chat_model=args.model)
    conversation = args.conversation or uuid.uuid4().hex
    # each turn streamed from the warm service; -v wants this process's own logs
    graph = (None if args.verbose else warm_client.chat_graph(cfg)) or running.graph_with_history(cfg)
    thread = running.conversation_thread(cfg, conversation)
    return chat_loop(graph, running.run_config(cfg, thread), conversation,
                     max_question_chars=cfg.max_question_chars)


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from keel.server.app import create_app
    from keel.server.binding import check_bind

    check_bind(args.host, auth=not args.no_auth)
    app = create_app(require_auth=not args.no_auth)
    print(serve_banner(args.host, args.port), file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", **proxy_options(os.environ))
    return 0


def proxy_options(environ) -> dict:
    """Whose X-Forwarded-For is believed: only the proxies the deployment names in
    FORWARDED_ALLOW_IPS (uvicorn's variable). Unset, none: uvicorn would otherwise believe any
    loopback client, which could then pose as any address (and dodge the wrong-key bound)."""
    trusted = (environ.get("FORWARDED_ALLOW_IPS") or "").strip()
    return {"proxy_headers": True, "forwarded_allow_ips": trusted} if trusted else {"proxy_headers": False}


def serve_banner(host: str, port: int) -> str:
    """Where a person opens what ``keel serve`` serves: the chat page first."""
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{port}"
    return (f"Keel chat page: {base}/\n"
            f"  LangServe playground: {base}/chat/playground/   API docs: {base}/docs")


def _cmd_servers(args: argparse.Namespace) -> int:
    cfg = Configuration()
    if args.action == "stop":
        stopped = (["warm CLI service"] if warm_client.stop_all(cfg) else []) + servers.stop(cfg)
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
        return 0
    if args.action == "start":
        servers.redis_url(cfg), servers.mongodb_uri(cfg), servers.llm_endpoint(cfg)
    for status in servers.status(cfg):
        state = "healthy" if status.healthy else ("running" if status.running else "stopped")
        kind = "embedded" if status.managed else "configured"
        pid = f" pid {status.pid}" if status.pid else ""
        print(f"{status.name:22} {state:8} {kind:10} {status.url or '-'}{pid}")
    for pid in warm_client.running_services(cfg):
        print(f"{'cli':22} {'running':8} {'warm':10} keel ask's warm service pid {pid}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    return run_demo(args)


if __name__ == "__main__":
    sys.exit(main())
