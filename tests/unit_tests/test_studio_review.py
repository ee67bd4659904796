"""Human review in LangGraph Studio under Keel's auth (keel/server/studio_review.py), called as
LangGraph's server calls the hooks: a reviewer reads and resumes only a thread whose turn waits in
the review queue for a LangGraph server, the resume runs as the asker with the reviewer's name on
the decision, an asker cannot resume their own answer, and `keel review` / /review point to Studio
for such a turn instead of resuming it."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from langgraph_sdk import Auth

import keel.server.studio_auth as studio
from keel.core.configuration import Configuration
from keel.nodes.review_answer import held_in
from keel.server.limits import RateLimiter
from keel.server.review_routes import ReviewHeldElsewhere, resume_review
from keel.stores.review_queue import HELD_IN_KEEL, HELD_IN_LANGGRAPH_SERVER, ReviewQueue
from tests.serving_fakes import InMemoryCollection
from tests.unit_tests.test_human_review import QUESTION, ask, config, keel_graph, pause_of

CFG = Configuration()
HELD = uuid.UUID("1ef4f7a2-0000-6000-8000-0000000000b1")
OTHER = uuid.UUID("1ef4f7a2-0000-6000-8000-0000000000b2")


@pytest.fixture
def queue(monkeypatch) -> ReviewQueue:
    """The review queue the hooks consult, with one turn of alice's paused in Studio (thread HELD)."""
    queue = ReviewQueue(InMemoryCollection())
    queue.file({"_id": "r-1", "thread_id": str(HELD), "user_id": "alice", "question": QUESTION,
                "held_in": HELD_IN_LANGGRAPH_SERVER})
    monkeypatch.setattr(studio, "review_queue", lambda: queue)
    rate = RateLimiter(per_minute=6000, burst=1000)
    monkeypatch.setattr(studio, "run_rate", lambda: rate)
    return queue


def ctx(action: str, user: str = "rita", role: str = "reviewer") -> Auth.types.AuthContext:
    return Auth.types.AuthContext(permissions=[f"role:{role}"], user=SimpleNamespace(identity=user),
                                  resource="threads", action=action)


def run(coroutine):
    return asyncio.run(coroutine)


def resume(kwargs: dict, thread_id=HELD, user: str = "rita", role: str = "reviewer"):
    value = {"thread_id": thread_id, "kwargs": kwargs}
    return run(studio.checked_run(ctx("create_run", user, role), value)), value


def refused(kwargs: dict, thread_id=HELD, user: str = "rita", role: str = "reviewer") -> Auth.exceptions.HTTPException:
    with pytest.raises(Auth.exceptions.HTTPException) as refusal:
        resume(kwargs, thread_id, user, role)
    return refusal.value


def test_a_reviewer_reads_a_thread_held_for_review_and_no_other_users_thread(queue):
    assert run(studio.own_or_held_for_review(ctx("read"), {"thread_id": HELD})) is None  # no owner filter
    assert run(studio.own_or_held_for_review(ctx("read"), {"thread_id": OTHER})) == {"owner": "rita"}
    for role in ("user", "admin"):
        expected = None if role == "admin" else {"owner": "mallory"}
        assert run(studio.own_or_held_for_review(ctx("read", "mallory", role), {"thread_id": HELD})) == expected
    queue.mark_done("r-1", {"state": "approved"})  # once decided, the thread is its owner's again
    assert run(studio.own_or_held_for_review(ctx("read"), {"thread_id": HELD})) == {"owner": "rita"}


def test_a_turn_held_in_keels_own_store_is_not_opened_through_studio(queue):
    queue.file({"_id": "r-2", "thread_id": str(OTHER), "user_id": "bob", "held_in": HELD_IN_KEEL})
    assert run(studio.own_or_held_for_review(ctx("read"), {"thread_id": OTHER})) == {"owner": "rita"}
    assert refused({"command": {"resume": "approve"}}, thread_id=OTHER).status_code == 404


def test_listings_stay_the_callers_own_and_reviewer_keys_copy_no_thread(queue):
    for status in ("interrupted", None):  # "interrupted" also names threads paused for other reasons
        assert run(studio.owner_only(ctx("search"), {"status": status})) == {"owner": "rita"}
    with pytest.raises(Auth.exceptions.HTTPException) as copy:  # LangGraph's copy: a create without metadata
        run(studio.own_new_thread(ctx("create"), {"thread_id": OTHER}))
    assert copy.value.status_code == 403
    created = {"thread_id": OTHER, "metadata": None}
    assert run(studio.own_new_thread(ctx("create"), created)) == {"owner": "rita"}
    assert created["metadata"] == {"owner": "rita"}
    assert run(studio.own_new_thread(ctx("create", "alice", "user"), {"thread_id": OTHER})) == {"owner": "alice"}


def test_asking_again_or_deleting_the_thread_ends_the_reviewers_access(queue, monkeypatch):
    monkeypatch.setattr(studio, "server_config", lambda: Configuration(review_mode="always"))
    question = {"input": {"messages": [{"type": "human", "content": QUESTION}]}}
    resume({**question}, user="mallory", role="user", thread_id=HELD)  # not hers: nothing retired
    assert queue.get("r-1")["state"] == "pending"
    resume({"input": None}, user="alice", role="user")  # a replay asks nothing new
    assert queue.get("r-1")["state"] == "pending"
    resume({**question}, user="alice", role="user")
    assert queue.get("r-1")["state"] == "stale"
    assert run(studio.own_or_held_for_review(ctx("read"), {"thread_id": HELD})) == {"owner": "rita"}
    queue.file({"_id": "r-3", "thread_id": str(OTHER), "user_id": "alice", "held_in": HELD_IN_LANGGRAPH_SERVER})
    assert run(studio.own_thread_deleted(ctx("delete", "mallory", "user"), {"thread_id": OTHER})) == {"owner": "mallory"}
    assert queue.get("r-3")["state"] == "pending"
    run(studio.own_thread_deleted(ctx("delete", "alice", "user"), {"thread_id": OTHER}))
    assert queue.get("r-3")["state"] == "stale"


def test_a_conversation_is_its_id_its_asker_and_where_it_is_held():
    queue = ReviewQueue(InMemoryCollection())
    queue.file({"_id": "studio", "thread_id": "t-1", "user_id": "alice", "held_in": HELD_IN_LANGGRAPH_SERVER})
    queue.file({"_id": "served", "thread_id": "t-1", "user_id": "mallory", "held_in": HELD_IN_KEEL})
    assert queue.get("studio")["state"] == "pending" == queue.get("served")["state"]
    assert queue.pending_in_thread("t-1", HELD_IN_LANGGRAPH_SERVER)["_id"] == "studio"
    queue.file({"_id": "studio-2", "thread_id": "t-1", "user_id": "alice", "held_in": HELD_IN_LANGGRAPH_SERVER})
    assert queue.get("studio")["state"] == "stale" and queue.get("served")["state"] == "pending"


def test_a_reviewers_resume_runs_as_the_asker_with_the_reviewers_name_on_the_decision(queue):
    command, config, context = {"resume": {"action": "edit", "text": "Mara Holt [Source 1].", "reviewer": "bob"}}, {}, None
    kwargs = {"input": None, "command": command, "config": config, "context": context}
    filters, value = resume(kwargs)
    assert filters is None  # the queue decided which thread; LangGraph's owner filter would refuse it
    assert value["kwargs"]["command"] is command  # written into the dicts LangGraph's server keeps using
    assert command["resume"] == {"action": "edit", "text": "Mara Holt [Source 1].", "reviewer": "rita",
                                 "review_id": "r-1"}  # bound to the turn it was checked against
    assert config["configurable"]["user_id"] == "alice" and value["kwargs"]["context"] == {"user_id": "alice"}
    assert config["recursion_limit"] == CFG.max_request_recursion_limit
    assert resume({"command": {"resume": {"action": "reject", "review_id": "r-0"}}})[1]["kwargs"]["command"]["resume"] \
        == {"action": "reject", "reviewer": "rita", "review_id": "r-1"}


@pytest.mark.parametrize("kwargs, status, words", [
    ({"command": {"resume": "maybe"}}, 400, "action must be one of"),
    ({"command": {"resume": {"action": "edit"}}}, 400, "edit needs"),
    ({"command": {"resume": ["approve"]}}, 400, "decision is an object"),
    ({"command": {"resume": "approve", "update": {"answer": "forged"}}}, 400, "only command.resume"),
    ({"command": {"goto": "review_answer"}}, 400, "only command.resume"),
    ({"command": {"resume": "approve"}, "input": {"messages": [("human", "hi")]}}, 400, "no input"),
    ({"command": {"resume": "approve"}, "config": {"configurable": {"user_id": "rita"}}}, 400, "user_id"),
    ({"command": {"resume": "approve"}, "context": {"review_mode": "off"}}, 400, "review_mode"),
    ({"command": {"resume": "approve"}, "config": {"configurable": {"checkpoint_id": "1"}}}, 400, "checkpoint_id"),
    ({"command": {"resume": "approve"}, "config": {"callbacks": []}}, 400, "callbacks"),
    ({"command": {"resume": "approve"}, "config": {"recursion_limit": 10_000}}, 400, "recursion_limit"),
])
def test_a_reviewers_run_carries_the_decision_and_nothing_else(queue, kwargs, status, words):
    refusal = refused(kwargs)
    assert refusal.status_code == status and words in refusal.detail


def test_nobody_resumes_a_thread_without_a_pending_review_and_askers_never(queue):
    assert refused({"command": {"resume": "approve"}}, thread_id=OTHER).status_code == 404
    assert refused({"command": {"resume": "approve"}}, thread_id=None).status_code == 404
    asker = refused({"command": {"resume": "approve"}}, user="alice", role="user")  # her own held answer
    assert asker.status_code == 400 and "reviewer" in asker.detail
    resume({"command": {"resume": "approve"}})
    queue.mark_done("r-1", {"state": "approved"})
    assert refused({"command": {"resume": "approve"}}).status_code == 404  # one decision per pause


def test_a_reviewer_asking_their_own_question_is_checked_like_anyone(queue):
    filters, value = resume({"input": {"messages": [{"type": "human", "content": QUESTION}]}}, thread_id=OTHER)
    assert filters == {"owner": "rita"} and value["kwargs"]["config"]["configurable"]["user_id"] == "rita"


def test_the_graph_records_where_a_held_turn_can_be_resumed():
    assert held_in({"configurable": {"thread_id": "t", "user_id": "alice"}}) == HELD_IN_KEEL
    served = {"configurable": {"thread_id": "t", "assistant_id": "8b3d96ce", "graph_id": "keel"}}
    assert held_in(served) == HELD_IN_LANGGRAPH_SERVER
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(queue=queue)
    cfg = config(review_mode="always")
    cfg["configurable"]["assistant_id"] = "8b3d96ce"
    payload = pause_of(ask(graph, cfg))
    assert payload["held_in"] == HELD_IN_LANGGRAPH_SERVER == queue.get(payload["review_id"])["held_in"]


def test_keel_review_and_the_review_routes_send_a_studio_turn_back_to_studio():
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(checkpointer=InMemorySaver(), queue=queue)
    cfg = config(review_mode="always")
    cfg["configurable"]["assistant_id"] = "8b3d96ce"  # as a LangGraph server's run is configured
    review_id = pause_of(ask(graph, cfg))["review_id"]
    with pytest.raises(ReviewHeldElsewhere) as elsewhere:
        resume_review(graph, queue, review_id, {"action": "approve"}, "rita", CFG, {"review_mode": "always"})
    assert "LangGraph Studio" in str(elsewhere.value) and "conv-1" in str(elsewhere.value)
    assert queue.get(review_id)["state"] == "pending"  # nothing claimed, the pause still there
    resumed = graph.invoke(Command(resume={"action": "approve", "reviewer": "rita"}), cfg)
    assert resumed["review"]["reviewer"] == "rita" and queue.get(review_id)["state"] == "approved"


def test_a_decision_bound_to_one_held_turn_never_settles_a_later_one():
    """A resume queued behind the asker's next question finds another turn paused: it pauses again."""
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(checkpointer=InMemorySaver(), queue=queue)
    cfg = config(review_mode="always")
    first = pause_of(ask(graph, cfg))["review_id"]
    second = pause_of(ask(graph, cfg))["review_id"]
    result = graph.invoke(Command(resume={"action": "approve", "reviewer": "rita", "review_id": first}), cfg)
    payload = pause_of(result)
    assert payload["review_id"] == second and f"for review {first}" in payload["problem"]
    assert result["status"] == "awaiting_review" and queue.get(second)["state"] == "pending"
    done = graph.invoke(Command(resume={"action": "approve", "reviewer": "rita", "review_id": second}), cfg)
    assert done["review"]["id"] == second and queue.get(second)["state"] == "approved"
