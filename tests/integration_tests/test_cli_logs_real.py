"""What the `keel` command writes on stderr on the real parts: an ordinary answer logs no ERROR, and
`keel -v` shows Keel's records without pymongo's per-command debug lines (the Mongo-wire server is
asked on every turn: the conversation history, the API users)."""

from __future__ import annotations

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


def keel(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KEEL_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "keel.cli.main", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def log_lines(stderr: str, level: str) -> list[str]:
    return [line for line in stderr.splitlines() if f" {level} " in line]


@pytest.fixture(scope="module")
def reader(keel_config, redis_url, mongodb_uri, llm_endpoint, tmp_path_factory):
    """A user who has ingested the island report through `keel ingest`."""
    user = f"logs-{uuid.uuid4().hex[:8]}"
    pdf = make_pdf(tmp_path_factory.mktemp("docs") / "varden-report.pdf", ISLAND_REPORT_PAGES,
                   title="Varden Island Annual Report")
    ingested = keel(Path(keel_config.keel_home), "ingest", str(pdf), "--user", user, "--json")
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    return Path(keel_config.keel_home), user


def test_an_ordinary_answer_logs_no_error(reader):
    home, user = reader
    completed = keel(home, "ask", QUESTION, "--user", user)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "Mara Holt" in completed.stdout or "1874" in completed.stdout, completed.stdout
    assert log_lines(completed.stderr, "ERROR") == []


def test_keel_v_shows_keels_debug_records_and_no_pymongo_line(reader):
    home, user = reader
    completed = keel(home, "-v", "ask", QUESTION, "--user", user)
    assert completed.returncode == 0, completed.stderr[-2000:]
    debug = log_lines(completed.stderr, "DEBUG")
    assert debug and all(" keel." in line or " keel:" in line for line in debug), debug[:5]
    assert [line for line in completed.stderr.splitlines() if "pymongo" in line] == []
    assert log_lines(completed.stderr, "ERROR") == []


def test_keel_v_users_list_on_the_mongo_wire_server_prints_no_pymongo_line(reader):
    home, _ = reader
    completed = keel(home, "-v", "users", "list")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert [line for line in completed.stderr.splitlines() if "pymongo" in line] == []
