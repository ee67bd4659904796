"""Human review on the real parts: ``keel ask`` (one process, the real SmolLM2 on llama.cpp, the real
MongoDB checkpointer and review queue) pauses a turn for review; ``keel review`` in other processes
lists it, shows the draft and approves it, resuming the run from its checkpoint in MongoDB after the
process that paused it has exited; the conversation then holds the reviewed answer in place of the
waiting message, with who reviewed it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from keel.server.ownership import thread_of

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.real
CLINIC = "The Northside clinic is open from 8 am to 6 pm on weekdays and from 9 am to 1 pm on Saturdays.\n"
QUESTION = "When is the Northside clinic open on Saturdays?"


def keel(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keel.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "KEEL_HOME": str(home), **env}, timeout=480)


def test_a_turn_paused_by_keel_ask_is_approved_by_keel_review_in_another_process(
        keel_home, keel_config, mongodb_uri, llm_endpoint, unique_user, tmp_path):
    document = tmp_path / "clinic.txt"
    document.write_text(CLINIC, encoding="utf-8")
    ingested = keel("ingest", str(document), "--user", unique_user, "--json", home=keel_home)
    assert ingested.returncode == 0, ingested.stderr
    conversation = f"review-{uuid.uuid4().hex[:10]}"

    asked = keel("ask", QUESTION, "--user", unique_user, "--conversation", conversation, "--json",
                 home=keel_home, KEEL_REVIEW_MODE="always")
    assert asked.returncode == 0, asked.stderr
    waiting = json.loads(asked.stdout)
    assert waiting["status"] == "awaiting_review" and waiting["answer"] == keel_config.review_pending_message
    review_id = waiting["review"]["id"]

    listed = json.loads(keel("review", "list", "--json", home=keel_home).stdout)["items"]
    item = next(row for row in listed if row["review_id"] == review_id)
    thread = thread_of(unique_user, conversation)  # the user's own conversation (keel/server/ownership.py)
    assert item["user_id"] == unique_user and item["thread_id"] == thread and item["question"] == QUESTION
    shown = json.loads(keel("review", "show", review_id, "--json", home=keel_home).stdout)
    assert {"draft", "sources", "quality", "status", "attempts"} <= set(shown)
    expected = shown["draft"] or shown["would_show"]  # approve shows the draft, or the fallback when none

    approved = keel("review", "approve", review_id, "--reviewer", "rita", "--json", home=keel_home)
    assert approved.returncode == 0, approved.stderr
    outcome = json.loads(approved.stdout)
    assert outcome["answer"] == expected and outcome["review"]["state"] == "approved"
    assert outcome["conversation_id"] == conversation
    assert outcome["review"]["reviewer"] == "rita" and outcome["status"] != "awaiting_review"

    from keel.graph import build_graph
    from keel.stores.history import get_checkpointer

    reader = build_graph(checkpointer=get_checkpointer(keel_config))
    state = reader.get_state({"configurable": {"thread_id": thread}})
    answers = [m for m in state.values["messages"] if isinstance(m, AIMessage)]
    assert len(answers) == 1 and answers[0].content == expected and not state.next
    assert answers[0].additional_kwargs["keel"]["review"]["reviewer"] == "rita"
    assert state.values["status"] == outcome["status"]

    again = keel("review", "approve", review_id, home=keel_home)
    assert again.returncode == 1 and "no pending review" in again.stdout
