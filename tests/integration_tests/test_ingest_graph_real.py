"""The ingestion graph (langgraph.json "keel_ingest") on the real parts: a base64 Markdown file sent
with a run is stored in the embedded Redis Stack with all-MiniLM-L6-v2 embeddings, under the run's
user, and a question on the chat graph then retrieves it as its source. The chat model is scripted
(what is under test is that the chat graph finds the document, not SmolLM2's wording)."""

from __future__ import annotations

import base64
import uuid

import pytest

from keel.graph import build_graph
from tests.answer_fakes import ScriptedChatModel
from tests.fakes import WordTokenizer
from tests.langgraph_json import langgraph_spec, load_reference
from tests.redis_cleanup import drop_index

NOTES = (
    "# Varden clinic\n\n"
    "The Varden clinic is open from 8 am to 6 pm on weekdays. On Saturdays it opens from 9 am to 1 pm, "
    "and it is closed on Sundays and public holidays.\n\n"
    "## Appointments\n\nAppointments are booked at the front desk or by telephone on 555-0142.\n"
)
ANSWER = "<answer>The Varden clinic is open from 8 am to 6 pm on weekdays [Source 1].</answer>"


@pytest.fixture
def run_config(redis_url, redis_client, monkeypatch):
    """A fresh user on a fresh index of the session's Redis, dropped afterwards."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    index = f"test_ingest_graph_{uuid.uuid4().hex[:8]}"
    yield {"configurable": {"user_id": f"ingest-{uuid.uuid4().hex[:8]}", "index_name": index}}
    drop_index(redis_client, index)


def test_a_studio_upload_is_stored_and_the_chat_graph_answers_from_it(run_config):
    ingest = load_reference(langgraph_spec()["graphs"]["keel_ingest"])  # as Studio loads it
    upload = {"filename": "clinic.md", "data_base64": base64.b64encode(NOTES.encode()).decode(),
              "mime_type": "text/markdown"}
    report = ingest.invoke({"files": [upload]}, run_config)
    assert report["errors"] == [] and report["documents"] == 1 and report["children"] >= 1

    chat = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER] * 10, calls=[]), tokenizer=WordTokenizer())
    result = chat.invoke({"messages": [("human", "When is the Varden clinic open?")]}, run_config)
    assert result["status"] == "success", result
    assert result["sources"][0]["source"] == "clinic.md"
    assert result["sources"][0]["doc_id"] == report["doc_ids"][0]


def test_another_users_question_does_not_find_the_upload(run_config):
    ingest = load_reference(langgraph_spec()["graphs"]["keel_ingest"])
    report = ingest.invoke({"files": [{"filename": "clinic.md", "text": NOTES}]}, run_config)
    assert report["documents"] == 1
    chat = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER] * 10, calls=[]), tokenizer=WordTokenizer())
    other = {"configurable": {**run_config["configurable"], "user_id": f"other-{uuid.uuid4().hex[:8]}"}}
    result = chat.invoke({"messages": [("human", "When is the Varden clinic open?")]}, other)
    assert result["status"] != "success" and result["sources"] == []
