"""`keel ask` through the warm CLI service on the real parts (SmolLM2, Redis Stack, the Mongo-wire
server): the first command starts the service, the next ones reuse it and print what the command
prints by itself, another user is answered from their own documents only, and `keel chat`
streams its turns from the same service, and `keel servers status` / the service's own stop see
it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.pdf_factory import make_pdf
from tests.varden_guide import ISLAND_REPORT_PAGES

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who built the Varden lighthouse?"


def keel(home: Path, *args: str, service: str = "auto") -> subprocess.CompletedProcess:
    env = {**os.environ, "KEEL_HOME": str(home), "KEEL_CLI_SERVICE": service}
    return subprocess.run([sys.executable, "-m", "keel.cli.entry", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def reader(keel_config, redis_url, mongodb_uri, llm_endpoint, tmp_path_factory):
    """A user who has ingested the island report; the services started here are stopped at the end."""
    from keel.cli import warm_client

    user = f"warm-{uuid.uuid4().hex[:8]}"
    pdf = make_pdf(tmp_path_factory.mktemp("docs") / "varden-report.pdf", ISLAND_REPORT_PAGES,
                   title="Varden Island Annual Report")
    home = Path(keel_config.keel_home)
    ingested = keel(home, "ingest", str(pdf), "--user", user, "--json", service="off")
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    yield home, user
    warm_client.stop_all(keel_config)


def _services(home: Path) -> list[str]:
    return [line for line in keel(home, "servers", "status").stdout.splitlines() if line.startswith("cli ")]


def test_the_service_answers_as_the_command_does_and_is_reused(reader):
    home, user = reader
    conversation = uuid.uuid4().hex
    own = keel(home, "ask", QUESTION, "--user", user, "--json", service="off")
    assert own.returncode == 0, own.stderr[-2000:]
    first = keel(home, "ask", QUESTION, "--user", user, "--conversation", conversation, "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stderr == ""  # nothing of the service's start-up on the command's stderr
    started = _services(home)
    assert len(started) == 1, started
    second = keel(home, "ask", "And when was it built?", "--user", user, "--conversation", conversation, "--json")
    assert second.returncode == 0, second.stderr[-2000:]
    assert _services(home) == started  # the same process answered
    mine, theirs = json.loads(own.stdout), json.loads(first.stdout)
    assert list(theirs) == list(mine)  # the same keys, in the same order
    assert theirs["status"] == mine["status"] == "success"
    assert {s["source"] for s in theirs["sources"]} == {s["source"] for s in mine["sources"]}
    assert "Mara Holt" in theirs["answer"] or "1874" in theirs["answer"], theirs["answer"]
    assert json.loads(second.stdout)["conversation_id"] == conversation


def test_another_user_is_answered_from_their_own_documents(reader):
    home, _ = reader
    stranger = keel(home, "ask", QUESTION, "--user", f"nobody-{uuid.uuid4().hex[:8]}", "--json")
    assert stranger.returncode == 0, stranger.stderr[-2000:]
    out = json.loads(stranger.stdout)
    assert out["sources"] == [] and "Mara Holt" not in out["answer"]


def test_keel_chat_streams_its_turns_from_the_same_service(reader):
    """The chat's own process loads no model (its peak memory is a fraction of one that does) and
    prints the answer the service gives."""
    home, user = reader
    started = _services(home)
    env = {**os.environ, "KEEL_HOME": str(home), "KEEL_CLI_SERVICE": "auto"}
    measure = ("import json, resource, subprocess, sys; "
               "done = subprocess.run([sys.executable, '-m', 'keel.cli.entry', 'chat', '--user', sys.argv[1]], "
               "input=sys.argv[2] + '\\n', capture_output=True, text=True, timeout=600); "
               "print(json.dumps({'code': done.returncode, 'out': done.stdout, 'err': done.stderr, "
               "'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}))")
    ran = subprocess.run([sys.executable, "-c", measure, user, QUESTION], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=700)
    chat = json.loads(ran.stdout)
    assert chat["code"] == 0, chat["err"][-2000:]
    assert "Mara Holt" in chat["out"] or "1874" in chat["out"], chat["out"]
    assert chat["peak_mb"] < 150, chat["peak_mb"]  # a process that loads the models peaks over 500 MB
    assert _services(home) == started


def test_the_service_is_listed_and_stopped(reader, keel_config):
    from keel.cli import warm_client

    home, user = reader
    assert keel(home, "ask", QUESTION, "--user", user).returncode == 0
    assert warm_client.running_services(keel_config)
    assert warm_client.stop_all(keel_config)
    assert warm_client.running_services(keel_config) == [] and _services(home) == []
    assert list((home / "run").glob("cli-*.sock")) == []
