"""Human review of weak answers, on fakes: which turns each review_mode holds back, what the
reviewer is shown when the run pauses (LangGraph's interrupt), what approve, edit and reject make of
the turn, that nothing of a held answer reaches the asker's streams before the reviewer decides, that
review cannot be switched per request, and that only reviewers reach the /review routes, whose
resume runs as the asker."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from keel.core.configuration import Configuration, ConfigurationError
from keel.core.settings import ReviewSettings, scope_of
from keel.core.state import AnswerStatus
from keel.graph import build_graph
from keel.server.app import create_app
from keel.server.settings_policy import RequestRefused, check_request_settings
from keel.server.studio_runs import check_run
from keel.stores.review_queue import ReviewQueue
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import InMemoryCollection, bearer, keys_and_owners

ROOT = Path(__file__).resolve().parents[2]
FACTS = [
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    "The lighthouse lamp can be seen from 22 nautical miles away.",
]
QUESTION = "Who built the Varden lighthouse?"
GOOD = "<answer>Mara Holt, an engineer, built the Varden lighthouse in 1874 [Source 1].</answer>"
OFF_THE_DOCUMENTS = "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>"
# the drafts' own words (not the passages'): the asker must not see them before review
HELD_WORDS = ("Mara Holt, an engineer", "Eiffel")


def keel_graph(responses=(GOOD,), checkpointer=None, queue=None):
    model = ScriptedChatModel(responses=list(responses), chunk_chars=3)
    docs = [passage_doc(text, page=n, doc_id="doc-1") for n, text in enumerate(FACTS, 1)]
    return build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                       tokenizer=WordTokenizer(), checkpointer=checkpointer or InMemorySaver(), review_queue=queue)


def config(thread_id: str = "conv-1", **settings) -> dict:
    return {"configurable": {"user_id": "alice", "thread_id": thread_id, **settings}}


def ask(graph, cfg: dict, question: str = QUESTION) -> dict:
    return graph.invoke({"messages": [("human", question)]}, cfg)


def pause_of(result: dict) -> dict:
    (pause,) = result["__interrupt__"]
    return pause.value


# --- which turns are held ------------------------------------------------------------------------

def test_review_is_off_by_default_and_the_answer_is_shown_at_once():
    assert Configuration().review_mode == "off"
    result = ask(keel_graph(), config())
    assert result["status"] == "success" and "Mara Holt" in result["answer"]
    assert "__interrupt__" not in result and not result.get("review")


def test_always_pauses_before_the_answer_with_what_a_reviewer_needs():
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(queue=queue)
    result = ask(graph, config(review_mode="always"))
    assert result["status"] == AnswerStatus.AWAITING_REVIEW.value == "awaiting_review"
    assert result["answer"] == Configuration().review_pending_message and result["sources"] == []
    assert not any(word in json.dumps(result["messages"][-1].content) for word in HELD_WORDS)
    payload = pause_of(result)
    assert payload["question"] == QUESTION and "Mara Holt" in payload["draft"]
    assert payload["sources"][0]["source"] == "handbook.pdf" and payload["quality"] >= 0.6
    assert payload["status"] == "success" and payload["attempts"] == 1
    assert (payload["thread_id"], payload["user_id"]) == ("conv-1", "alice")
    assert result["review"] == {"id": payload["review_id"], "state": "pending"}
    (item,) = queue.pending(10)
    assert item["_id"] == payload["review_id"] and item["draft"] == payload["draft"] and item["user_id"] == "alice"
    # the conversation holds the waiting notice, marked as such, until the reviewer decides
    waiting = graph.get_state(config())
    assert waiting.next == ("review_answer",)
    assert waiting.values["messages"][-1].additional_kwargs["keel"]["status"] == "awaiting_review"


def test_below_threshold_holds_only_an_answer_whose_quality_stayed_below_after_the_retries():
    graph = keel_graph(responses=[OFF_THE_DOCUMENTS] * 5)
    weak = ask(graph, config("weak", review_mode="below_threshold", max_attempts=1))
    payload = pause_of(weak)
    assert payload["status"] in ("hallucination_detected", "low_confidence") and payload["attempts"] == 1
    assert payload["quality"] < Configuration().quality_threshold and "Eiffel" in payload["draft"]
    assert payload["would_show"] == Configuration().fallback_answer
    fine = ask(keel_graph(), config("fine", review_mode="below_threshold"))
    assert fine["status"] == "success" and "__interrupt__" not in fine


def test_statuses_holds_only_the_chosen_statuses():
    chosen = {"review_mode": "statuses", "review_statuses": ["hallucination_detected", "low_confidence"]}
    held = ask(keel_graph(responses=[OFF_THE_DOCUMENTS] * 5), config("held", max_attempts=1, **chosen))
    assert held["status"] == "awaiting_review"
    shown = ask(keel_graph(), config("shown", **chosen))
    assert shown["status"] == "success" and "__interrupt__" not in shown
    only_success = ask(keel_graph(), config("success", review_mode="statuses", review_statuses=["success"]))
    assert only_success["status"] == "awaiting_review"


# --- the reviewer's decision ---------------------------------------------------------------------

def test_approve_shows_the_draft_in_place_of_the_waiting_message_with_who_reviewed_and_when():
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(queue=queue)
    cfg = config(review_mode="always")
    waiting = ask(graph, cfg)
    waiting_id = waiting["messages"][-1].id
    result = graph.invoke(Command(resume={"action": "approve", "reviewer": "rita"}), cfg)
    assert result["status"] == "success" and "Mara Holt" in result["answer"]
    assert result["sources"][0]["source"] == "handbook.pdf"
    assert result["review"]["state"] == "approved" and result["review"]["reviewer"] == "rita"
    assert result["review"]["reviewed_at"].startswith("20")
    answers = [m for m in result["messages"] if isinstance(m, AIMessage)]
    assert len(answers) == 1 and answers[0].id == waiting_id and answers[0].content == result["answer"]
    assert answers[0].additional_kwargs["keel"]["review"]["reviewer"] == "rita"
    # the node ran again from its start on resume: the item was filed once and marked done
    records = list(queue.collection.records.values())
    assert len(records) == 1 and records[0]["state"] == "approved" and records[0]["reviewer"] == "rita"
    assert queue.pending(10) == []


def test_approving_a_draft_the_checks_held_back_shows_it_as_the_reviewers_answer():
    graph = keel_graph(responses=[OFF_THE_DOCUMENTS] * 5)
    cfg = config(review_mode="below_threshold", max_attempts=1)
    ask(graph, cfg)
    result = graph.invoke(Command(resume="approve"), cfg)
    assert result["status"] == "success" and "Eiffel" in result["answer"] and result["review"]["state"] == "approved"


def test_edit_shows_the_reviewers_text_with_the_sources_it_cites():
    graph = keel_graph()
    cfg = config(review_mode="always")
    ask(graph, cfg)
    text = "The engineer Mara Holt built it in 1874 [Source 1]."
    result = graph.invoke(Command(resume={"action": "edit", "text": text, "reviewer": "rita"}), cfg)
    assert result["answer"] == text and result["status"] == "success"
    assert [s["page"] for s in result["sources"]] == [1] and "[Source 1]" in result["sources_markdown"]
    assert "reviewer_edited" in result["reasons"] and result["review"]["state"] == "edited"
    assert result["messages"][-1].additional_kwargs["keel"]["citations"][0]["number"] == 1


def test_reject_shows_the_fallback_with_a_status_that_says_so_and_keeps_the_note_for_reviewers():
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(queue=queue)
    cfg = config(review_mode="always")
    review_id = ask(graph, cfg)["review"]["id"]
    result = graph.invoke(Command(resume={"action": "reject", "note": "wrong engineer", "reviewer": "rita"}), cfg)
    assert result["status"] == AnswerStatus.REVIEW_REJECTED.value == "review_rejected"
    assert result["answer"] == Configuration().fallback_answer and result["sources"] == []
    assert "note" not in result["review"]
    assert queue.get(review_id)["note"] == "wrong engineer" and queue.get(review_id)["state"] == "rejected"
    custom = keel_graph()
    custom_cfg = config("conv-2", review_mode="always", review_rejected_answer="Please call the front desk.")
    ask(custom, custom_cfg)
    assert custom.invoke(Command(resume="reject"), custom_cfg)["answer"] == "Please call the front desk."


def test_a_resume_value_that_is_no_decision_pauses_again_naming_the_problem_and_loses_nothing():
    graph = keel_graph()
    cfg = config(review_mode="always")
    ask(graph, cfg)
    again = graph.invoke(Command(resume={"action": "publish"}), cfg)
    assert again["status"] == "awaiting_review" and "action must be one of" in pause_of(again)["problem"]
    again = graph.invoke(Command(resume={"action": "edit", "text": "  "}), cfg)
    assert "needs the reviewer's answer text" in pause_of(again)["problem"]
    result = graph.invoke(Command(resume={"action": "approve", "reviewer": "rita"}), cfg)
    assert result["status"] == "success" and "Mara Holt" in result["answer"]


def test_a_new_graph_resumes_a_run_another_one_paused():
    saver, queue = InMemorySaver(), ReviewQueue(InMemoryCollection())
    cfg = config(review_mode="always")
    ask(keel_graph(checkpointer=saver, queue=queue), cfg)
    restarted = keel_graph(responses=["<answer>never asked</answer>"], checkpointer=saver, queue=queue)
    result = restarted.invoke(Command(resume={"action": "approve", "reviewer": "rita"}), cfg)
    assert "Mara Holt" in result["answer"] and queue.pending(10) == []


def test_the_studio_graph_pauses_and_resumes_with_the_checkpointer_studio_gives_it():
    studio = json.loads((ROOT / "langgraph.json").read_text())
    assert studio["graphs"]["keel"] == "./graph/chat_graph.py:graph"
    from keel.graph import graph as studio_graph

    assert "review_answer" in studio_graph.get_graph().nodes and studio_graph.checkpointer is None
    # Studio compiles nothing itself: it hands the compiled graph its persistence, as here
    graph = keel_graph(checkpointer=None).copy(update={"checkpointer": InMemorySaver()})
    cfg = config(review_mode="always")
    assert pause_of(ask(graph, cfg))["status"] == "success"
    assert graph.invoke(Command(resume="approve"), cfg)["status"] == "success"


# --- nothing reaches the asker before the reviewer -----------------------------------------------

def test_the_streams_hold_the_answer_back_until_it_is_approved():
    graph = keel_graph(responses=[OFF_THE_DOCUMENTS, GOOD])
    cfg = config(review_mode="always")
    custom, chunks, final = [], [], {}
    for namespace, mode, payload in graph.stream({"messages": [("human", QUESTION)]}, cfg,
                                                 stream_mode=["custom", "messages", "values"], subgraphs=True):
        if mode == "custom":
            custom.append(payload)
        elif mode == "messages" and isinstance(payload[0], AIMessageChunk):
            chunks.append(payload[0].content)
        elif mode == "values" and not namespace:
            final = payload
    assert not [event for event in custom if event.get("event") in ("keel.token", "keel.revert", "keel.continuation")]
    said = "".join(chunks)
    assert said == Configuration().review_pending_message and not any(word in said for word in HELD_WORDS)
    assert final["status"] == "awaiting_review"
    resumed = [payload[0].content for mode, payload in graph.stream(Command(resume="approve"), cfg,
                                                                    stream_mode=["messages"])
               if isinstance(payload[0], AIMessageChunk)]
    assert "".join(resumed) == graph.get_state(cfg).values["answer"] and "Mara Holt" in "".join(resumed)


def test_with_review_off_the_live_draft_still_streams():
    graph = keel_graph()
    events = [p for _, mode, p in graph.stream({"messages": [("human", QUESTION)]}, config(),
                                               stream_mode=["custom"], subgraphs=True)]
    assert any(event.get("event") == "keel.token" for event in events)


# --- review is the deployment's decision ---------------------------------------------------------

def test_every_review_setting_is_deployment_scope_and_refused_in_a_request_or_a_studio_run():
    assert all(scope_of(item) == "deployment" for item in fields(ReviewSettings))
    cfg = Configuration()
    for key, value in (("review_mode", "off"), ("review_mode", "always"), ("review_statuses", ["success"])):
        with pytest.raises(RequestRefused) as refused:
            check_request_settings({key: value}, cfg)
        assert refused.value.status == 400 and "fixed by the server's configuration" in refused.value.message
        for where in ({"config": {"configurable": {key: value}}}, {"context": {key: value}}):
            run = {"input": {"messages": [{"type": "human", "content": QUESTION}]}, **where}
            with pytest.raises(RequestRefused):
                check_run(run, "thread-1", cfg, "alice")
    resume = {"input": None, "command": {"resume": "approve"}, "config": {}}
    with pytest.raises(RequestRefused) as refused:
        check_run(resume, "thread-1", cfg, "alice")
    assert "reviewer" in refused.value.message


def test_the_environment_sets_review_for_the_deployment_and_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("KEEL_REVIEW_MODE", "statuses")
    monkeypatch.setenv("KEEL_REVIEW_STATUSES", "low_confidence, not_safe")
    cfg = Configuration()
    assert cfg.review_mode == "statuses" and cfg.review_statuses == ("low_confidence", "not_safe")
    monkeypatch.setenv("KEEL_REVIEW_MODE", "sometimes")
    with pytest.raises(ConfigurationError, match="KEEL_REVIEW_MODE"):
        Configuration()
    monkeypatch.setenv("KEEL_REVIEW_MODE", "off")
    monkeypatch.setenv("KEEL_REVIEW_STATUSES", "awaiting_review")
    with pytest.raises(ConfigurationError, match="review_statuses"):
        Configuration()


# --- the /review routes --------------------------------------------------------------------------

@pytest.fixture
def served():
    api_keys, keys, owners = keys_and_owners(users=("alice", "mallory"))
    keys["rita"] = api_keys.add("rita", role="reviewer")
    keys["ada"] = api_keys.add("ada", role="admin")
    queue = ReviewQueue(InMemoryCollection())
    graph = keel_graph(responses=[OFF_THE_DOCUMENTS, GOOD], queue=queue)  # a rejected draft first
    cfg = Configuration(review_mode="always", rate_limit_burst=10_000, auth_failure_limit=0)
    app = create_app(graph=graph, cfg=cfg, store=object(), api_keys=api_keys, owners=owners, review_queue=queue)
    return TestClient(app, raise_server_exceptions=False), keys, queue


def chat_body(thread_id: str = "conv-1") -> dict:
    return {"input": {"messages": [{"type": "human", "content": QUESTION}]},
            "config": {"configurable": {"thread_id": thread_id}}}


def test_the_asker_sees_awaiting_review_and_nothing_of_the_draft_on_invoke_and_events(served):
    client, keys, queue = served
    response = client.post("/chat/invoke", json=chat_body(), headers=bearer(keys["alice"]))
    assert response.status_code == 200, response.text
    output = response.json()["output"]
    assert output["status"] == "awaiting_review" and output["answer"] == Configuration().review_pending_message
    assert not any(word in response.text for word in HELD_WORDS) and "__interrupt__" not in response.text
    events = client.post("/chat/events", json=chat_body("conv-2"), headers=bearer(keys["alice"]))
    assert "event: keel.token" not in events.text and not any(word in events.text for word in HELD_WORDS)
    final = json.loads([line for line in events.text.splitlines() if line.startswith("data: ")][-1][6:])
    assert final["status"] == "awaiting_review"
    conversation = client.get("/conversations/conv-1", headers=bearer(keys["alice"])).json()
    assert conversation["messages"][-1]["status"] == "awaiting_review"
    assert len(queue.pending(10)) == 2


def test_only_reviewers_and_admins_reach_the_queue_and_unknown_ids_are_404(served):
    client, keys, queue = served
    client.post("/chat/invoke", json=chat_body(), headers=bearer(keys["alice"]))
    (item,) = queue.pending(10)
    for user in ("alice", "mallory"):
        for method, path in (("get", "/review"), ("get", f"/review/{item['_id']}"),
                             ("post", f"/review/{item['_id']}/approve"), ("post", f"/review/{item['_id']}/reject")):
            assert getattr(client, method)(path, headers=bearer(keys[user])).status_code == 403, (user, path)
    assert client.get("/review").status_code == 401
    for user in ("rita", "ada"):
        listed = client.get("/review", headers=bearer(keys[user])).json()["items"]
        assert [row["review_id"] for row in listed] == [item["_id"]] and "Mara Holt, an engineer" in listed[0]["draft"]
    shown = client.get(f"/review/{item['_id']}", headers=bearer(keys["rita"])).json()
    assert shown["question"] == QUESTION and shown["user_id"] == "alice" and shown["quality"] >= 0.6
    assert client.get("/review/0123456789abcdef", headers=bearer(keys["rita"])).status_code == 404
    assert client.post("/review/0123456789abcdef/approve", headers=bearer(keys["rita"])).status_code == 404
    assert client.post(f"/review/{item['_id']}/edit", json={"text": ""}, headers=bearer(keys["rita"])).status_code == 400


def test_a_reviewers_action_resumes_the_askers_turn_once_and_the_conversation_shows_it(served):
    client, keys, queue = served
    client.post("/chat/invoke", json=chat_body(), headers=bearer(keys["alice"]))
    (item,) = queue.pending(10)
    text = "The engineer Mara Holt built it in 1874 [Source 1]."
    response = client.post(f"/review/{item['_id']}/edit", json={"text": text}, headers=bearer(keys["rita"]))
    assert response.status_code == 200, response.text
    outcome = response.json()
    assert outcome["answer"] == text and outcome["status"] == "success" and outcome["review"]["reviewer"] == "rita"
    conversation = client.get("/conversations/conv-1", headers=bearer(keys["alice"])).json()
    assert conversation["messages"][-1]["text"] == text and conversation["messages"][-1]["status"] == "success"
    assert len([m for m in conversation["messages"] if m["role"] == "assistant"]) == 1
    # the turn ran as its asker: rita has no such conversation, alice's is the one resumed
    assert client.get("/conversations/conv-1", headers=bearer(keys["rita"])).status_code == 404
    # done: the id resumes nothing any more
    assert client.post(f"/review/{item['_id']}/approve", headers=bearer(keys["ada"])).status_code == 404
    assert client.get(f"/review/{item['_id']}", headers=bearer(keys["ada"])).status_code == 404


def test_an_item_whose_conversation_went_on_is_not_resumed(served):
    client, keys, queue = served
    client.post("/chat/invoke", json=chat_body(), headers=bearer(keys["alice"]))
    (first,) = queue.pending(10)
    client.post("/chat/invoke", json=chat_body(), headers=bearer(keys["alice"]))  # asked again meanwhile
    assert queue.get(first["_id"])["state"] == "stale"  # filing the new turn retired the old one
    (second,) = queue.pending(10)
    assert client.post(f"/review/{first['_id']}/approve", headers=bearer(keys["rita"])).status_code == 404
    # an item whose conversation holds no pause for it (it went on unseen) is found stale when acted on
    queue.collection.records[second["_id"]]["thread_id"] = "conv-elsewhere"
    assert client.post(f"/review/{second['_id']}/approve", headers=bearer(keys["rita"])).status_code == 404
    assert queue.get(second["_id"])["state"] == "stale"


def test_no_langserve_stream_shows_a_held_draft(served):
    """/stream_log and /stream_events show every run's input and output: the answer loop's drafts
    (the one its checks rejected and the one held for review) must be in none of them."""
    client, keys, queue = served
    for route in ("/chat/stream", "/chat/stream_log", "/chat/stream_events"):
        response = client.post(route, json=chat_body(f"conv{route.replace('/', '-')}"), headers=bearer(keys["alice"]))
        assert response.status_code == 200, response.text
        assert "awaiting_review" in response.text, route
        assert not any(word in response.text for word in HELD_WORDS), route
    assert len(queue.pending(10)) == 3


def test_reject_over_http_with_or_without_a_note(served):
    client, keys, queue = served
    for thread_id, body in (("conv-a", {"note": "not from the handbook"}), ("conv-b", None)):
        client.post("/chat/invoke", json=chat_body(thread_id), headers=bearer(keys["alice"]))
        (item,) = queue.pending(10)
        response = client.post(f"/review/{item['_id']}/reject", json=body, headers=bearer(keys["ada"]))
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "review_rejected" and response.json()["review"]["reviewer"] == "ada"
        assert queue.get(item["_id"])["note"] == (body or {}).get("note")
    too_long = "x" * (Configuration().review_text_max_chars + 1)
    client.post("/chat/invoke", json=chat_body("conv-c"), headers=bearer(keys["alice"]))
    (item,) = queue.pending(10)
    refused = client.post(f"/review/{item['_id']}/reject", json={"note": too_long}, headers=bearer(keys["ada"]))
    assert refused.status_code == 400 and "longer than" in refused.json()["detail"]
    assert queue.get(item["_id"])["state"] == "pending"  # nothing was resumed


def test_a_turn_paused_in_langgraph_studio_is_a_409_that_says_to_resume_it_there(served):
    client, keys, queue = served
    queue.file({"_id": "0123456789abcdef0123456789abcdef", "thread_id": "studio-thread", "user_id": "alice",
                "question": QUESTION, "held_in": "langgraph_server"})
    listed = client.get("/review", headers=bearer(keys["rita"])).json()["items"]
    assert any(item["review_id"] == "0123456789abcdef0123456789abcdef" and item["held_in"] == "langgraph_server"
               for item in listed)
    response = client.post("/review/0123456789abcdef0123456789abcdef/approve", headers=bearer(keys["rita"]))
    assert response.status_code == 409 and "LangGraph Studio (thread studio-thread)" in response.json()["detail"]
    assert queue.get("0123456789abcdef0123456789abcdef")["state"] == "pending"
