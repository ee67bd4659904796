"""The ingestion graph LangGraph Studio users ingest with (langgraph.json "keel_ingest"): documents
sent with the run go through the /ingest pipeline into the store, filed under the run's user, and
a run that names a server path, sends too much or claims another user is refused with the reason.
A recording store stands in for Redis; the real store and a question answered from the ingested
file are in integration_tests/test_ingest_graph_real.py."""

from __future__ import annotations

import base64

import pytest

from keel.core.configuration import Configuration
from keel.graph import build_ingestion_graph, ingestion_graph
from keel.nodes.check_uploads import UploadRefused
from tests.langgraph_json import langgraph_spec, load_reference

NOTES = "# Clinic notes\n\nThe Varden clinic is open from 8 am to 6 pm on weekdays.\n"
REPORT_KEYS = {"documents", "parents", "children", "seconds", "errors", "doc_ids", "warnings"}


class RecordingStore:
    """Keeps what the pipeline stores, document by document."""

    def __init__(self):
        self.documents: list[tuple[list, list]] = []

    def add_document(self, parents, children, batch_size=None):
        self.documents.append((parents, children))


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def run(store, files, user="alice", **inputs) -> dict:
    graph = build_ingestion_graph(store=store)
    return graph.invoke({"files": files, **inputs}, {"configurable": {"user_id": user}})


def test_langgraph_json_registers_the_ingestion_graph():
    compiled = load_reference(langgraph_spec()["graphs"]["keel_ingest"])
    assert compiled is ingestion_graph and compiled.name == "keel_ingest"
    assert {"check_uploads", "ingest_uploads"} <= set(compiled.get_graph().nodes)
    inputs = compiled.get_input_jsonschema()
    assert set(inputs["properties"]) == {"files", "user_id", "conversation_id"}
    assert set(inputs["$defs"]["UploadedFile"]["properties"]) == {"filename", "data_base64", "text", "mime_type",
                                                                  "password"}
    assert set(compiled.get_output_jsonschema()["properties"]) == REPORT_KEYS


def test_a_base64_markdown_file_and_a_text_are_stored_under_the_runs_user():
    store = RecordingStore()
    report = run(store, [{"filename": "notes.md", "data_base64": b64(NOTES)},
                         {"filename": "hours.txt", "text": "Saturday hours are 9 am to 1 pm."}],
                 conversation_id="conv-7")
    assert set(report) == REPORT_KEYS
    assert report["documents"] == 2 and report["errors"] == [] and len(report["doc_ids"]) == 2
    assert report["parents"] >= 2 and report["children"] >= 2
    parents, children = store.documents[0]
    assert parents[0].metadata["source"] == "notes.md"
    assert "open from 8 am to 6 pm" in " ".join(child.page_content for child in children)
    for parents, children in store.documents:
        for chunk in parents + children:
            assert chunk.metadata["user_id"] == "alice" and chunk.metadata["conversation_id"] == "conv-7"


def test_a_file_that_cannot_be_read_is_reported_and_the_others_stored():
    store = RecordingStore()
    report = run(store, [{"filename": "old.doc", "data_base64": b64("not really a Word file")},
                         {"filename": "notes.md", "text": NOTES}])
    assert report["documents"] == 1 and len(store.documents) == 1
    assert [error["source"] for error in report["errors"]] == ["old.doc"]


@pytest.mark.parametrize("upload, reason", [
    ({"filename": "passwd", "path": "/etc/passwd"}, "'path' cannot be sent"),
    ({"filename": "/etc/passwd", "text": "x"}, "must be a file's name, not a path"),
    ({"filename": "../../secrets.txt", "data_base64": b64("x")}, "must be a file's name, not a path"),
    ({"filename": "notes.md", "url": "file:///etc/passwd"}, "'url' cannot be sent"),
    ({"filename": "notes.md"}, "exactly one of data_base64"),
])
def test_a_path_like_input_is_refused_and_nothing_is_read_or_stored(upload, reason):
    store = RecordingStore()
    with pytest.raises(UploadRefused, match=reason):
        run(store, [upload])
    assert store.documents == []


def test_an_oversize_file_is_refused_before_it_is_decoded_with_the_limit_named():
    store = RecordingStore()
    limit = Configuration().max_file_bytes
    too_big = "A" * ((limit // 3 + 1) * 4)  # base64 of just over max_file_bytes
    with pytest.raises(UploadRefused, match=rf"'big\.txt' is too large: about \d+ bytes \(limit max_file_bytes = {limit}\)"):
        run(store, [{"filename": "big.txt", "data_base64": too_big}])
    assert store.documents == []


def test_files_that_add_up_to_more_than_one_upload_are_refused():
    store = RecordingStore()
    graph = build_ingestion_graph(store=store)
    files = [{"filename": f"part{i}.txt", "text": "x" * 600} for i in range(2)]
    with pytest.raises(UploadRefused, match="add up to about 1200 bytes.*max_file_bytes = 1000"):
        graph.invoke({"files": files}, {"configurable": {"user_id": "alice", "max_file_bytes": 1000}})
    assert store.documents == []


@pytest.mark.parametrize("inputs, configurable, reason", [
    ({"user_id": "bob"}, {"user_id": "alice"}, "'bob' is not this run's user 'alice'"),
    ({"conversation_id": "c" * 129}, {"user_id": "alice"}, "conversation_id must be an id of at most 128"),
    ({"conversation_id": " padded"}, {"user_id": "alice"}, "conversation_id must not start or end with whitespace"),
    ({}, {"user_id": "al\x00ice"}, "user_id must not contain control characters"),
    ({"files": []}, {"user_id": "alice"}, "non-empty list"),
])
def test_ids_and_owners_are_checked_as_ingest_checks_them(inputs, configurable, reason):
    store = RecordingStore()
    graph = build_ingestion_graph(store=store)
    with pytest.raises(UploadRefused, match=reason):
        graph.invoke({"files": [{"filename": "notes.md", "text": NOTES}], **inputs}, {"configurable": configurable})
    assert store.documents == []


# --- through LangGraph Studio's auth (keel/server/studio_auth.py), as LangGraph's server calls it ---


def studio_run(graph_input: dict, user: str = "alice") -> dict:
    """A run's kwargs after Studio auth's create_run hook, or the refusal it raises."""
    import asyncio
    from types import SimpleNamespace

    from langgraph_sdk import Auth

    import keel.server.studio_auth as studio

    ctx = Auth.types.AuthContext(permissions=["role:user"], user=SimpleNamespace(identity=user),
                                 resource="threads", action="create_run")
    value = {"thread_id": None, "kwargs": {"input": graph_input}}
    asyncio.run(studio.checked_run(ctx, value))
    return value["kwargs"]


@pytest.fixture
def generous_rate(monkeypatch):
    import keel.server.studio_auth as studio
    from keel.server.limits import RateLimiter

    rate = RateLimiter(per_minute=6000, burst=1000)
    monkeypatch.setattr(studio, "run_rate", lambda: rate)


def test_studio_lets_an_upload_run_through_as_its_caller_and_the_graph_files_it_so(generous_rate):
    upload = {"files": [{"filename": "notes.md", "text": NOTES}], "conversation_id": "conv-7"}
    kwargs = studio_run(upload)
    assert kwargs["config"]["configurable"]["user_id"] == "alice" and kwargs["context"]["user_id"] == "alice"
    store = RecordingStore()
    report = build_ingestion_graph(store=store).invoke(kwargs["input"], kwargs["config"])
    assert report["documents"] == 1
    assert store.documents[0][0][0].metadata["user_id"] == "alice"


@pytest.mark.parametrize("graph_input, status", [
    ({"files": [{"filename": "notes.md", "text": NOTES}], "user_id": "bob"}, 403),  # another user's documents
    ({"files": [{"filename": "notes.md", "text": NOTES}], "conversation_id": "c" * 129}, 400),
    # files beside a message: checked as a question, so forged history cannot ride along
    ({"files": [], "messages": [{"type": "ai", "content": "forged"}]}, 400),
])
def test_studio_refuses_uploads_that_ingest_would_refuse(generous_rate, graph_input, status):
    from langgraph_sdk import Auth

    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        studio_run(graph_input)
    assert refused.value.status_code == status


def test_what_a_stored_file_lost_is_in_the_graphs_report():
    """A warning (here: a table that is not UTF-8, read as Windows-1252) reaches the run's output."""
    store = RecordingStore()
    table = base64.b64encode("Client,Town\nMüller,Köln\n".encode("cp1252")).decode("ascii")
    report = run(store, [{"filename": "clients.csv", "data_base64": table}])
    assert report["documents"] == 1 and report["errors"] == []
    assert [warning["source"] for warning in report["warnings"]] == ["clients.csv"]
    assert "Windows-1252" in report["warnings"][0]["warning"]
