"""LangSmith tracing as docs/usage.md shows it: the standard environment variables alone (LANGSMITH_*,
or the older LANGCHAIN_* names) send Keel's runs to the project named there, under clean run names:
the graph's (``keel``, ``keel_ingest``) and one per step.

A stand-in LangSmith API on a loopback port receives the runs; the graphs run in a child process
with only those variables set, as a user's app would (the LangSmith client reads them once).
Model, retriever and store are fakes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.langgraph_json import PROJECT_ROOT

TRACED_RUNS = """
from langchain_core.tracers.langchain import wait_for_all_tracers
from keel.graph import build_graph, build_ingestion_graph
from tests.unit_tests.test_graph_memory import fake_parts
from tests.unit_tests.test_ingest_graph import NOTES, RecordingStore
result = build_graph(**fake_parts()).invoke({"messages": [("human", "When is the clinic open?")]},
                                             {"configurable": {"user_id": "alice"}})
assert result["status"] == "success", result
report = build_ingestion_graph(store=RecordingStore()).invoke(
    {"files": [{"filename": "notes.md", "text": NOTES}]}, {"configurable": {"user_id": "alice"}})
assert report["documents"] == 1, report
wait_for_all_tracers()
"""
CLEAN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
GENERIC_NAMES = {"LangGraph", "RunnableLambda", "RunnableSequence", "RunnableCallable", "partial", "ChannelWrite"}


class FakeLangSmith(BaseHTTPRequestHandler):
    """Answers LangSmith's API and keeps every run it is sent (multipart batches)."""

    runs: list[dict] = []

    def do_GET(self):  # /info: no special server features
        self._reply()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.startswith("/runs/multipart"):
            message = BytesParser().parsebytes(f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode() + body)
            for part in message.get_payload():
                name = part.get_param("name", header="content-disposition") or ""
                if name.startswith("post.") and name.count(".") == 1:
                    self.runs.append(json.loads(part.get_payload(decode=True)))
        self._reply()

    do_PATCH = do_POST

    def _reply(self):
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def langsmith():
    FakeLangSmith.runs = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeLangSmith)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeLangSmith.runs
    server.shutdown()
    server.server_close()


def traced(script: str, variables: dict[str, str]) -> None:
    """Run ``script`` in a child process whose environment has ``variables`` and no other LangSmith setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, env={**env, **variables},
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("prefix, switch", [("LANGSMITH", "LANGSMITH_TRACING"), ("LANGCHAIN", "LANGCHAIN_TRACING_V2")])
def test_the_environment_variables_alone_trace_keels_graphs_with_clean_names(langsmith, prefix, switch):
    endpoint, runs = langsmith
    traced(TRACED_RUNS, {switch: "true", f"{prefix}_API_KEY": "lsv2_test_key", f"{prefix}_PROJECT": "keel-docs",
                         f"{prefix}_ENDPOINT": endpoint})
    assert {run["session_name"] for run in runs} == {"keel-docs"}
    roots = {run["id"]: run["name"] for run in runs if not run.get("parent_run_id")}
    assert sorted(roots.values()) == ["keel", "keel_ingest"]
    steps = {root: {run["name"] for run in runs if run.get("trace_id") == trace} for trace, root in roots.items()}
    assert {"guardrails", "route_query", "single_doc_answer", "generate_answer", "validate_answer",
            "finalize_answer"} <= steps["keel"]
    assert steps["keel_ingest"] == {"keel_ingest", "check_uploads", "ingest_uploads"}
    names = {run["name"] for run in runs}
    assert all(CLEAN_NAME.fullmatch(name) for name in names), names
    assert not names & GENERIC_NAMES
