"""Human review in LangGraph Studio on the real parts: `langgraph dev` serves the repository's own
langgraph.json (Keel's graph and Keel's Studio auth) over the session's embedded Redis Stack, MongoDB
and SmolLM2, with review on for the deployment. An asker's turn pauses in Studio's persistence and is
filed in Keel's review queue; `keel review list` shows it with its thread; the reviewer opens that
thread, reads the draft, and resumes it with their own key; the asker
cannot; afterwards the asker's thread holds the reviewed answer and the reviewer can no longer read it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.replica_processes import Replica, keel_env

pytest.importorskip("langgraph_api", reason="langgraph dev needs langgraph-cli[inmem] (the [test] extra)")
from langgraph_sdk import get_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLINIC = "The Northside clinic is open from 8 am to 6 pm on weekdays and from 9 am to 1 pm on Saturdays.\n"
QUESTION = "When is the Northside clinic open on Saturdays?"
ANSWER_S = 420


def keel(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keel.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "KEEL_HOME": str(home), **env}, timeout=ANSWER_S)


@pytest.fixture
def studio_server(keel_home, mongodb_uri, redis_url, llm_endpoint, tmp_path):
    """`langgraph dev` on the repository's langgraph.json, review on for every turn."""
    command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--config", str(ROOT / "langgraph.json"),
               "--no-browser", "--no-reload", "--port"]
    env = keel_env(keel_home, KEEL_REVIEW_MODE="always", LANGSMITH_TRACING="false")
    server = Replica("langgraph-dev", command, env, tmp_path / "langgraph-dev.log", health_path="/ok")
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()


def status_of(call) -> int:
    try:
        asyncio.run(call())
    except httpx.HTTPStatusError as error:
        return error.response.status_code
    return 200


def test_a_reviewer_resumes_a_turn_held_in_studio_and_the_asker_cannot(studio_server, keel_home, keel_config,
                                                                       unique_user, tmp_path):
    from keel.server.auth import ApiKeys

    keys = ApiKeys.from_config(keel_config)
    asker_key, reviewer_name = keys.add(unique_user), f"{unique_user}-rita"
    reviewer_key = keys.add(reviewer_name, role="reviewer")
    document = tmp_path / "clinic.txt"
    document.write_text(CLINIC, encoding="utf-8")
    ingested = keel("ingest", str(document), "--user", unique_user, "--json", home=keel_home)
    assert ingested.returncode == 0, ingested.stderr

    def client(key: str):
        return get_client(url=studio_server, headers={"Authorization": f"Bearer {key}"}, timeout=ANSWER_S)

    question = {"messages": [{"type": "human", "content": QUESTION}]}

    async def ask() -> tuple[str, dict]:
        thread = await client(asker_key).threads.create()
        result = await client(asker_key).runs.wait(thread["thread_id"], "keel", input=question)
        return thread["thread_id"], result

    thread_id, waiting = asyncio.run(ask())
    assert waiting["status"] == "awaiting_review" and waiting["answer"] == keel_config.review_pending_message

    listed = json.loads(keel("review", "list", "--json", home=keel_home).stdout)["items"]
    item = next(row for row in listed if row["thread_id"] == thread_id)
    assert item["user_id"] == unique_user and item["held_in"] == "langgraph_server" and item["question"] == QUESTION
    sent_back = keel("review", "approve", item["review_id"], home=keel_home)
    assert sent_back.returncode == 1 and "resume it there" in sent_back.stdout

    async def reviewer_reads() -> tuple[list[str], dict]:
        listed = await client(reviewer_key).threads.search(status="interrupted", limit=100)
        state = await client(reviewer_key).threads.get_state(thread_id)  # by the id the queue names
        return [found["thread_id"] for found in listed], state

    listed, state = asyncio.run(reviewer_reads())
    assert thread_id not in listed  # listings stay the caller's own
    assert status_of(lambda: client(reviewer_key).threads.copy(thread_id)) == 403  # a copy keeps her conversation
    assert status_of(lambda: client(reviewer_key).threads.create()) == 200  # a thread of their own is fine
    (pause,) = [value for task in state["tasks"] for value in task["interrupts"]]
    payload = pause["value"]
    assert payload["question"] == QUESTION and payload["review_id"] == item["review_id"]
    expected = payload["draft"] or payload["would_show"]

    resume = {"resume": "approve"}
    assert status_of(lambda: client(asker_key).runs.wait(thread_id, "keel", command=resume)) == 400
    forged = {"configurable": {"user_id": reviewer_name}}
    assert status_of(lambda: client(reviewer_key).runs.wait(thread_id, "keel", command=resume, config=forged)) == 400

    decision = {"resume": {"action": "approve", "reviewer": "someone-else"}}
    resumed = asyncio.run(client(reviewer_key).runs.wait(thread_id, "keel", command=decision))
    assert resumed["answer"] == expected and resumed["status"] != "awaiting_review"
    assert resumed["review"]["reviewer"] == reviewer_name and resumed["review"]["state"] == "approved"

    final = asyncio.run(client(asker_key).threads.get_state(thread_id))
    assert final["values"]["answer"] == expected and not final["next"]
    assert final["values"]["messages"][-1]["additional_kwargs"]["keel"]["review"]["reviewer"] == reviewer_name
    assert status_of(lambda: client(reviewer_key).threads.get_state(thread_id)) == 404
    assert status_of(lambda: client(reviewer_key).runs.wait(thread_id, "keel", command=resume)) == 404
    again = keel("review", "show", item["review_id"], "--json", home=keel_home)
    assert again.returncode == 1 and "no pending review" in again.stdout
