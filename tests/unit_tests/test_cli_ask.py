"""`keel ask` refuses a question it cannot ask the way argparse refuses any bad argument: the
reason on stderr and exit code 2, before a graph, a store or a model is touched."""

from __future__ import annotations

from typing import Annotated, TypedDict

import pytest
from langgraph.graph.message import add_messages

import keel.cli.main as cli
import keel.cli.running as running
from keel.core.configuration import Configuration

TOO_LONG = "why " * (Configuration.max_question_chars // 4 + 1)


@pytest.fixture
def no_graph(monkeypatch):
    def refuse(cfg):
        raise AssertionError("an invalid question must not reach the graph")

    monkeypatch.setattr(running, "graph_with_history", refuse)
    monkeypatch.setattr(running, "ingest_paths", refuse)


@pytest.mark.parametrize(("question", "reason"), [
    ("", "the question is empty"),
    ("   \n\t ", "the question is empty"),
    (TOO_LONG, f"the question is longer than {Configuration.max_question_chars} characters"),
])
def test_an_empty_or_over_long_question_exits_2_with_the_reason(question, reason, no_graph, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ask", question, "--docs", "notes.md"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert f"keel ask: error: {reason}" in captured.err
    assert captured.out == "" and "(error)" not in captured.err


def test_a_question_is_asked_without_its_surrounding_spaces(monkeypatch, capsys):
    asked = []

    class Graph:
        def invoke(self, graph_input, config):
            asked.append(graph_input["messages"][0][1])
            return {"answer": "Mara Holt built it.", "status": "success", "sources": []}

    monkeypatch.setattr(running, "graph_with_history", lambda cfg: Graph())
    assert cli.main(["ask", "  Who built it?\n"]) == 0
    assert asked == ["Who built it?"]
    assert capsys.readouterr().out.startswith("Mara Holt built it.")


def test_an_i_dont_know_for_a_user_without_documents_says_so_and_who_asked(monkeypatch, capsys):
    class Graph:
        def invoke(self, graph_input, config):
            return {"answer": "I don't know based on the provided documents.", "status": "insufficient_context",
                    "route": "pretrained_corpus", "sources": []}

    class Store:
        def __init__(self, documents):
            self.documents = documents

        def list_documents(self, user_id):
            return self.documents

    monkeypatch.setattr(running, "graph_with_history", lambda cfg: Graph())
    monkeypatch.setattr("keel.models.embeddings.get_embeddings", lambda cfg: None)
    monkeypatch.setattr("keel.stores.connections.get_vector_store", lambda cfg, embeddings: Store([]))
    cli.main(["ask", "Who built it?", "--json"])
    captured = capsys.readouterr()
    assert "user 'default' has no documents" in captured.err and "keel ingest PATH --user default" in captured.err
    assert '"user_id": "default"' in captured.out

    monkeypatch.setattr("keel.stores.connections.get_vector_store",
                        lambda cfg, embeddings: Store([{"doc_id": "d1"}]))
    cli.main(["ask", "Who built it?", "--user", "alice"])
    assert "has no documents" not in capsys.readouterr().err  # she has some: the documents just do not say


def test_keel_serve_says_where_the_chat_page_is():
    assert cli.serve_banner("127.0.0.1", 8000).startswith("Keel chat page: http://127.0.0.1:8000/")
    assert "http://127.0.0.1:9000/chat/playground/" in cli.serve_banner("0.0.0.0", 9000)
    assert cli.serve_banner("::1", 8000).startswith("Keel chat page: http://[::1]:8000/")


def test_forwarded_addresses_are_believed_only_from_the_proxies_the_deployment_names():
    assert cli.proxy_options({}) == {"proxy_headers": False}
    assert cli.proxy_options({"FORWARDED_ALLOW_IPS": " "}) == {"proxy_headers": False}
    assert cli.proxy_options({"FORWARDED_ALLOW_IPS": "172.28.0.10"}) == {
        "proxy_headers": True, "forwarded_allow_ips": "172.28.0.10"}


def test_keel_serve_runs_uvicorn_with_those_options(monkeypatch):
    import uvicorn

    ran = {}
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.update(options))
    monkeypatch.setattr("keel.server.app.create_app", lambda require_auth: object())
    assert cli.main(["serve", "--port", "8123"]) == 0
    assert ran["proxy_headers"] is False and ran["port"] == 8123


def test_the_ingest_line_counts_copies_once_and_says_what_was_skipped():
    from keel.loaders.pipeline import IngestReport

    report = IngestReport(documents=3, parents=4, children=9, seconds=1.25, doc_ids=["a", "b", "a"],
                          errors=[{"source": "x.doc", "error": "unsupported"}],
                          warnings=[{"source": "scan.pdf", "warning": "low OCR confidence"}])
    assert cli.ingest_summary_line(report) == (
        "ingested 2 document(s) (1 a copy of another, 1 skipped, 1 warning(s)): 4 parents, 9 children in 1.2s")
    assert cli.ingest_summary_line(IngestReport(documents=1, parents=1, children=2, doc_ids=["a"])).startswith(
        "ingested 1 document(s) (0 skipped, 0 warning(s))")


def test_a_conversation_asked_in_the_cli_is_filed_under_its_user_for_the_web_page(monkeypatch):
    from keel.cli import ask as ask_module
    from keel.server import ownership

    claimed = []

    class Owners:
        def claim(self, thread_id, user_id):
            claimed.append((thread_id, user_id))
            return True

    class Graph:
        checkpointer = None

        def invoke(self, graph_input, config):
            return {"answer": "Mara Holt built it [Source 1].", "status": "success", "sources": []}

    monkeypatch.setattr(ownership.ThreadOwners, "from_config", classmethod(lambda cls, cfg: Owners()))
    monkeypatch.setattr(running, "keeps_history_in_mongodb", lambda graph: True)
    ask_module.answer(ask_module.AskRequest("Who built it?", "alice", "conv-7"), graph=Graph())
    assert claimed == [("conv-7", "alice")]

    monkeypatch.setattr(running, "keeps_history_in_mongodb", lambda graph: False)  # an app's own graph
    ask_module.answer(ask_module.AskRequest("Who built it?", "alice", "conv-8"), graph=Graph())
    assert claimed == [("conv-7", "alice")]


def test_ingest_says_what_the_seconds_before_its_progress_bar_are_spent_on(monkeypatch):
    import io

    from keel.runtime import servers

    def status(redis_running):
        return lambda cfg: [servers.ServerStatus("redis", None, None, redis_running, redis_running, True)]

    err = io.StringIO()
    monkeypatch.setattr(servers, "status", status(False))
    running.say_start_up(Configuration(), err)
    assert "starting the embedded Redis Stack" in err.getvalue() and "loading the embedding model" in err.getvalue()
    err = io.StringIO()
    monkeypatch.setattr(servers, "status", status(True))
    running.say_start_up(Configuration(), err)
    assert "Redis" not in err.getvalue()


def test_keel_ask_saves_a_turn_once_when_it_ends_not_after_every_step(monkeypatch):
    """As `keel serve` does: an interrupted `keel ask` leaves the conversation as it was, and a turn
    costs one write to the history, not one per step."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from keel.cli import ask as ask_module

    saver, writes = InMemorySaver(), []
    original_put = saver.put

    def put(*args, **kwargs):
        writes.append(args[0]["configurable"]["thread_id"])  # (config, checkpoint, metadata, versions)
        return original_put(*args, **kwargs)

    saver.put = put
    builder = StateGraph(_TurnState)
    builder.add_node("draft", lambda state: {"answer": "Mara Holt"})
    builder.add_node("check", lambda state: {"answer": state["answer"] + " built it.", "status": "success"})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "check")
    builder.add_edge("check", END)
    graph = builder.compile(checkpointer=saver)
    monkeypatch.setattr(running, "keeps_history_in_mongodb", lambda graph: False)
    reply = ask_module.answer(ask_module.AskRequest("Who built it?", "alice", "conv-9"), graph=graph)
    assert reply.out["answer"] == "Mara Holt built it."
    assert len(writes) == 1  # step by step, it was 4 (the input, then each of three steps)
    assert graph.get_state({"configurable": {"thread_id": writes[0]}}).values["answer"] == "Mara Holt built it."
    # `keel chat` streams its turns; each is saved once too.
    from keel.cli.chat import chat_modes

    modes = [mode for mode, _ in chat_modes(graph, "Who built it?", {"configurable": {"thread_id": "chat-1"}})]
    assert modes[-1] == "values" and writes.count("chat-1") == 1


class _TurnState(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    answer: str
    status: str
