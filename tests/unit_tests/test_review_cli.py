"""`keel review` on fakes: it lists and shows the queue's pending items, and approve / edit / reject
resume the paused turn from the conversation store as its asker, printing what the asker now sees;
an id with nothing pending exits 1 and resumes nothing. The graph the command builds is Keel's
default one: resuming a held turn calls no model."""

from __future__ import annotations

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import keel.cli.main as cli
import keel.stores.history as history
from keel.stores.review_queue import ReviewQueue
from tests.serving_fakes import InMemoryCollection
from tests.unit_tests.test_human_review import QUESTION, ask, config, keel_graph


@pytest.fixture
def paused(monkeypatch):
    """A turn of alice's held for review, in a checkpointer and a queue the command is given."""
    saver, queue = InMemorySaver(), ReviewQueue(InMemoryCollection())
    review_id = ask(keel_graph(checkpointer=saver, queue=queue), config(review_mode="always"))["review"]["id"]
    monkeypatch.setattr(history, "get_checkpointer", lambda cfg: saver)
    monkeypatch.setattr(ReviewQueue, "from_settings", classmethod(lambda cls, runtime, review: queue))
    return saver, queue, review_id


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["review", *argv])
    return code, capsys.readouterr().out


def test_list_and_show_print_the_pending_items(paused, capsys):
    _, _, review_id = paused
    code, out = run(capsys, "list", "--json")
    (item,) = json.loads(out)["items"]
    assert code == 0 and item["review_id"] == review_id and item["question"] == QUESTION and item["user_id"] == "alice"
    code, out = run(capsys, "list")
    assert code == 0 and review_id in out and "alice" in out and QUESTION in out
    code, out = run(capsys, "show", review_id, "--json")
    shown = json.loads(out)
    assert code == 0 and "Mara Holt" in shown["draft"] and shown["status"] == "success" and shown["attempts"] == 1


def test_edit_resumes_the_askers_turn_and_a_second_action_finds_nothing(paused, capsys):
    saver, queue, review_id = paused
    text = "The engineer Mara Holt built it in 1874 [Source 1]."
    code, out = run(capsys, "edit", review_id, "--text", text, "--reviewer", "rita", "--json")
    outcome = json.loads(out)
    assert code == 0 and outcome["answer"] == text and outcome["status"] == "success"
    assert outcome["review"]["state"] == "edited" and outcome["review"]["reviewer"] == "rita"
    state = keel_graph(checkpointer=saver).get_state(config())
    assert state.values["answer"] == text and not state.next and queue.pending(10) == []
    code, out = run(capsys, "approve", review_id)
    assert code == 1 and "no pending review" in out


def test_reject_with_a_note_and_an_unknown_id(paused, capsys):
    _, queue, review_id = paused
    code, out = run(capsys, "reject", review_id, "--note", "wrong engineer", "--reviewer", "rita")
    assert code == 0 and "review_rejected" in out and queue.get(review_id)["note"] == "wrong engineer"
    code, out = run(capsys, "show", "0123456789abcdef")
    assert code == 1 and "no pending review" in out


def test_a_turn_paused_in_langgraph_studio_is_listed_with_its_thread_and_sent_back_there(monkeypatch, capsys):
    saver, queue = InMemorySaver(), ReviewQueue(InMemoryCollection())
    studio_run = config(review_mode="always")
    studio_run["configurable"]["assistant_id"] = "8b3d96ce"  # as a LangGraph server configures its runs
    review_id = ask(keel_graph(checkpointer=saver, queue=queue), studio_run)["review"]["id"]
    monkeypatch.setattr(history, "get_checkpointer", lambda cfg: saver)
    monkeypatch.setattr(ReviewQueue, "from_settings", classmethod(lambda cls, runtime, review: queue))
    code, out = run(capsys, "list")
    assert code == 0 and review_id in out and "[in LangGraph Studio, thread conv-1]" in out
    code, out = run(capsys, "approve", review_id, "--reviewer", "rita")
    assert code == 1 and "resume it there" in out
    assert queue.get(review_id)["state"] == "pending"
