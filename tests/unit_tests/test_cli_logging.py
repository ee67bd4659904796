"""Logs that mean something: the library prints nothing unless its application asks, the `keel`
command shows Keel's own debug records under -v without the libraries' chatter, and only the
command's entry point configures logging."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import keel
import keel.cli.main as cli
from keel.cli.logs import THIRD_PARTY_LOGGERS, ConsoleLogHandler

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def restored_logging():
    """configure_logging changes process-wide state: put it back for the other tests."""
    root = logging.getLogger()
    names = ("keel", *THIRD_PARTY_LOGGERS)
    saved = root.level, {name: logging.getLogger(name).level for name in names}
    yield
    for handler in [h for h in root.handlers if isinstance(h, ConsoleLogHandler)]:
        root.removeHandler(handler)
    root.setLevel(saved[0])
    for name, level in saved[1].items():
        logging.getLogger(name).setLevel(level)


def run_keel(monkeypatch, capsys, *flags: str) -> str:
    """``keel [flags] servers status`` with a handler that logs what a command that talks to MongoDB
    logs: pymongo's per-command debug lines, Keel's own debug and warning records; its stderr."""

    def handler(args):
        logging.getLogger("pymongo.command").debug('{"message": "Command started", "commandName": "find"}')
        logging.getLogger("pymongo.connection").info("Connection checked out")
        logging.getLogger("keel.parser").debug("All parsing strategies failed (120 chars)")
        logging.getLogger("keel.stores.resilient_history").warning("conversation store at mongodb://x failed")
        return 0

    monkeypatch.setattr(cli, "_cmd_servers", handler)
    assert cli.main([*flags, "servers", "status"]) == 0
    return capsys.readouterr().err


def test_keel_v_shows_keels_debug_records_and_no_pymongo_debug_line(monkeypatch, capsys, restored_logging):
    err = run_keel(monkeypatch, capsys, "-v")
    assert "DEBUG keel.parser: All parsing strategies failed" in err
    assert "WARNING keel.stores.resilient_history" in err
    assert "pymongo" not in err


def test_keel_vv_opens_the_libraries_loggers_too(monkeypatch, capsys, restored_logging):
    err = run_keel(monkeypatch, capsys, "-vv")
    assert "DEBUG pymongo.command" in err and "INFO pymongo.connection" in err
    assert "DEBUG keel.parser" in err


def test_without_v_only_warnings_and_errors_show(monkeypatch, capsys, restored_logging):
    err = run_keel(monkeypatch, capsys)
    assert "WARNING keel.stores.resilient_history" in err
    assert "DEBUG" not in err and "pymongo" not in err


def test_configuring_twice_keeps_one_handler(monkeypatch, capsys, restored_logging):
    run_keel(monkeypatch, capsys, "-v")
    err = run_keel(monkeypatch, capsys, "-v")
    assert err.count("All parsing strategies failed") == 1


def test_the_keel_logger_has_a_null_handler_so_a_library_user_gets_no_last_resort_output():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("keel").handlers)


def test_importing_keel_and_running_the_graph_writes_nothing_to_stderr():
    """An application that configures no logging: a degraded-service warning on the way (the chat
    model fails once and is retried) must not reach its stderr through Python's last-resort handler."""
    script = textwrap.dedent("""
        from langchain_core.messages import HumanMessage
        from keel.graph import build_graph
        from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
        from tests.fakes import StaticRetriever, WordTokenizer, passage_doc

        class FailsOnce(ScriptedChatModel):
            def _stream(self, *args, **kwargs):
                if self.position == 0:
                    self.position += 1
                    raise ConnectionError("connection refused")
                yield from super()._stream(*args, **kwargs)

        model = FailsOnce(responses=["skipped", "The Varden lighthouse was built in 1874 by Mara Holt [Source 1]."])
        docs = [passage_doc("The Varden lighthouse was built in 1874 by the engineer Mara Holt.")]
        graph = build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                            tokenizer=WordTokenizer())
        result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]}, {"configurable": {}})
        print(result["status"], model.position)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRANSFORMERS_", "HF_HUB_"))}
    completed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.split() == ["success", "2"]  # the failed call, then the retry answered
    assert completed.stderr == ""


def _calls(tree: ast.AST, names: set[str]) -> list[str]:
    return [node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in names]


def test_only_the_commands_entry_point_configures_logging():
    """A module an application imports never installs a handler or sets the root logger's level:
    that is the application's choice. keel/cli/logs.py does it for the `keel` command; keel/__init__.py
    adds only the NullHandler."""
    package = Path(keel.__file__).resolve().parent
    sources = [*package.rglob("*.py")] + [p for folder in ("graph", "nodes", "chains", "retrievers", "loaders")
                                          for p in (ROOT / folder).rglob("*.py")]
    allowed = {package / "cli" / "logs.py", package / "__init__.py"}
    configuring = {"basicConfig", "dictConfig", "fileConfig", "addHandler"}
    offenders = {str(path.relative_to(ROOT)): _calls(ast.parse(path.read_text()), configuring)
                 for path in sources if path not in allowed}
    assert {path: calls for path, calls in offenders.items() if calls} == {}
