"""The web chat page's server side on fakes: the page shell and its assets are served without a key
but hold no data and forbid inline script (a strict Content-Security-Policy); every data route
needs a key and answers only with the caller's own documents and conversations (another user's
are 404, exactly like unknown ones); conversations are listed most recently active first with a
title from their first question and read back with their cited passages; keel.final carries the
passage each [Source N] points at."""

from __future__ import annotations

import base64
import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from keel.core.configuration import Configuration
from keel.server.web_assets import PAGE_ASSETS, WEB_FOLDER
from tests.serving_fakes import bearer
from tests.web_fakes import FACT, MAX_INPUT_TOKENS, QUESTION, UNANSWERABLE, web_page_app

ROOT = Path(__file__).resolve().parents[2]
DATA_ROUTES = [("get", "/me"), ("get", "/documents"), ("delete", "/documents/doc-1"), ("get", "/conversations"),
               ("get", "/conversations/thread-1")]


def ask(client, key, question, thread_id, **configurable):
    body = {"input": {"messages": [{"type": "human", "content": question}]},
            "config": {"configurable": {"thread_id": thread_id, **configurable}}}
    response = client.post("/chat/events", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    return response


def final_event(response) -> dict:
    import json

    data = [line[len("data: "):] for line in response.text.splitlines() if line.startswith("data: ")]
    return json.loads(data[-1])


@pytest.fixture
def served():
    app, keys, store = web_page_app()
    return TestClient(app, raise_server_exceptions=False), keys, store


def test_the_page_shell_and_its_assets_need_no_key_hold_no_data_and_allow_no_inline_script(served):
    client, keys, store = served
    store.add("alice", "doc-secret", "merger-plan.pdf", 3)
    ask(client, keys["alice"], QUESTION, "alice-thread")
    shell = client.get("/")
    assert shell.status_code == 200 and shell.headers["content-type"].startswith("text/html")
    policy = shell.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe" not in policy
    assert shell.headers["x-content-type-options"] == "nosniff"
    html = shell.text
    assert "merger-plan" not in html and "Varden" not in html and "alice" not in html
    assert all(script.group(1) for script in re.finditer(r"<script(?:\s+[^>]*?src=\"([^\"]+)\")?[^>]*>", html))
    assert not re.search(r"\son[a-z]+=|<style|\sstyle=", html)  # no inline handlers or styles either
    for path, (_, media_type) in PAGE_ASSETS.items():
        asset = client.get(path)
        assert asset.status_code == 200 and asset.headers["content-type"] == media_type, path
        assert asset.headers["content-security-policy"] == policy
    assert client.head("/").status_code == 200


def test_only_the_exact_page_paths_are_open_and_only_for_reading(served):
    client, _, _ = served
    assert client.post("/", json={}).status_code == 401
    assert client.put("/web/app.js", content=b"x").status_code == 401
    for path in ("/web/", "/web/app", "/web/../app.py", "/web/style.css/x", "/index.html"):
        assert client.get(path).status_code == 401, path


def test_every_data_route_needs_a_valid_key(served):
    client, _, _ = served
    for method, path in DATA_ROUTES:
        for headers in ({}, bearer("keel_wrong"), {"X-API-Key": "nope"}):
            response = client.request(method.upper(), path, headers=headers)
            assert response.status_code == 401, (method, path, headers)
            assert "Bearer" in response.headers["WWW-Authenticate"]


def test_me_is_the_credentials_user_with_the_limits_the_page_checks(served):
    client, keys, _ = served
    me = client.get("/me", headers=bearer(keys["mallory"])).json()
    assert me["user_id"] == "mallory"
    assert me["max_file_bytes"] == Configuration().max_file_bytes and ".pdf" in me["file_types"]
    assert client.get("/me?user_id=alice", headers=bearer(keys["mallory"])).json()["user_id"] == "mallory"


def test_without_authentication_the_page_works_as_the_development_user():
    from keel.server.app import create_app
    from keel.server.ownership import ThreadOwners
    from tests.serving_fakes import InMemoryCollection
    from tests.web_fakes import FakeDocumentStore, web_page_graph

    store = FakeDocumentStore()
    store.add("default", "doc-d", "dev.md")
    dev = TestClient(create_app(graph=web_page_graph(), cfg=Configuration(), store=store, require_auth=False,
                                owners=ThreadOwners(InMemoryCollection())))
    assert dev.get("/me").json()["user_id"] == "default"
    assert [doc["name"] for doc in dev.get("/documents").json()["documents"]] == ["dev.md"]


def test_documents_are_the_callers_own_and_another_users_cannot_be_deleted(served):
    client, keys, store = served
    store.add("alice", "doc-old", "handbook.pdf", 12, ingested_at=1_700_000_000)
    store.add("alice", "doc-new", "fees.docx", 2, ingested_at=1_800_000_000)
    store.add("mallory", "doc-m", "mallory.txt", 1)
    alice = bearer(keys["alice"])
    listed = client.get("/documents", headers=alice).json()["documents"]
    assert [(d["doc_id"], d["name"], d["pages"]) for d in listed] == [("doc-new", "fees.docx", 2),
                                                                      ("doc-old", "handbook.pdf", 12)]
    assert listed[0]["ingested_at"] == 1_800_000_000
    stolen = client.delete("/documents/doc-m", headers=alice)
    unknown = client.delete("/documents/doc-nothing", headers=alice)
    assert stolen.status_code == unknown.status_code == 404 and stolen.json()["detail"] == unknown.json()["detail"]
    assert [d["name"] for d in client.get("/documents", headers=bearer(keys["mallory"])).json()["documents"]] == [
        "mallory.txt"]
    assert client.delete("/documents/doc-old", headers=alice).json() == {"deleted": "doc-old"}
    assert [d["doc_id"] for d in client.get("/documents", headers=alice).json()["documents"]] == ["doc-new"]
    assert client.delete("/documents/doc-old", headers=alice).status_code == 404


def test_ids_in_the_url_are_checked_like_a_bodys(served):
    client, keys, _ = served
    alice = bearer(keys["alice"])
    too_long = "x" * (Configuration().max_request_id_chars + 1)
    for path in (f"/documents/{too_long}", "/documents/%20padded", f"/conversations/{too_long}",
                 "/conversations/tab%09bed"):
        method = "DELETE" if path.startswith("/documents") else "GET"
        response = client.request(method, path, headers=alice)
        assert response.status_code == 400, (path, response.text)


def test_an_uploaded_document_is_listed_with_its_pages(served):
    client, keys, _ = served
    text = base64.b64encode(b"# Ferry\n\nThe ferry leaves pier 4 at 6 pm on weekdays.").decode()
    uploaded = client.post("/ingest", json={"filename": "ferry.md", "data_base64": text}, headers=bearer(keys["alice"]))
    assert uploaded.status_code == 200, uploaded.text
    listed = client.get("/documents", headers=bearer(keys["alice"])).json()["documents"]
    assert [(d["name"], d["pages"], d["doc_id"]) for d in listed] == [("ferry.md", 1, uploaded.json()["doc_ids"][0])]


def test_keel_final_carries_each_cited_passage_with_its_file_page_and_text(served):
    client, keys, _ = served
    final = final_event(ask(client, keys["alice"], QUESTION, "cited"))
    assert final["status"] == "success" and "[Source 1]" in final["answer"]
    assert final["citations"] == [{"number": 1, "source": "handbook.pdf", "page": 3, "doc_id": "doc-1", "text": FACT}]
    unknown = final_event(ask(client, keys["alice"], UNANSWERABLE, "cited"))
    assert unknown["status"] == "insufficient_context" and unknown["citations"] == []


def test_an_answer_that_cites_nothing_still_points_at_every_passage_it_was_given():
    """The small default model often answers without [Source N]: its sources list (as
    sources_markdown numbers it) must still open the passages."""
    from keel.retrievers.passages import citations_of

    passages = [{"number": n, "text": f"text {n}", "source": f"f{n}.pdf", "page": n, "doc_id": f"d{n}", "score": 0.5,
                 "similarity": 0.5} for n in (1, 2)]
    assert [c["number"] for c in citations_of(passages, [2])] == [2]
    assert citations_of(passages, []) == [{"number": n, "source": f"f{n}.pdf", "page": n, "doc_id": f"d{n}",
                                           "text": f"text {n}"} for n in (1, 2)]


def test_conversations_are_the_callers_own_most_recently_active_first_titled_by_the_first_question(served):
    client, keys, _ = served
    alice = bearer(keys["alice"])
    ask(client, keys["alice"], QUESTION, "lighthouse")
    ask(client, keys["alice"], UNANSWERABLE, "mercury")
    ask(client, keys["alice"], "And when was it built?", "lighthouse")  # a follow-up: now the most recent
    client.post("/ingest", json={"filename": "a.md", "data_base64": base64.b64encode(b"# A\n\nSome text here.").decode(),
                                 "conversation_id": "upload-only"}, headers=alice)
    listed = client.get("/conversations", headers=alice).json()["conversations"]
    assert [(c["conversation_id"], c["title"], c["questions"]) for c in listed] == [
        ("lighthouse", QUESTION, 2), ("mercury", UNANSWERABLE, 1)]  # an upload's thread has nothing to resume
    assert client.get("/conversations", headers=bearer(keys["mallory"])).json() == {"conversations": []}


def test_a_conversation_reads_back_with_statuses_citations_and_the_open_mode_mark(served):
    client, keys, _ = served
    ask(client, keys["alice"], QUESTION, "t")
    ask(client, keys["alice"], UNANSWERABLE, "t")
    ask(client, keys["alice"], UNANSWERABLE, "t", grounding_mode="open")
    read = client.get("/conversations/t", headers=bearer(keys["alice"])).json()
    assert read["title"] == QUESTION
    roles = [(m["role"], m.get("status"), m.get("open_mode")) for m in read["messages"]]
    assert roles == [("user", None, None), ("assistant", "success", False), ("user", None, None),
                     ("assistant", "insufficient_context", False), ("user", None, None), ("assistant", "success", True)]
    first_answer = read["messages"][1]
    assert first_answer["citations"] == [{"number": 1, "source": "handbook.pdf", "page": 3, "doc_id": "doc-1",
                                          "text": FACT}]
    assert first_answer["sources"][0]["source"] == "handbook.pdf"


def test_another_users_conversation_is_404_like_an_unknown_one(served):
    client, keys, _ = served
    ask(client, keys["alice"], QUESTION, "alice-only")
    stolen = client.get("/conversations/alice-only", headers=bearer(keys["mallory"]))
    unknown = client.get("/conversations/never-was", headers=bearer(keys["mallory"]))
    assert stolen.status_code == unknown.status_code == 404
    assert stolen.json()["detail"] == unknown.json()["detail"] and "Varden" not in stolen.text


def test_the_list_is_bounded_and_long_titles_are_cut():
    app, keys, _ = web_page_app(cfg=Configuration(web_conversations_listed=2, conversation_title_chars=20,
                                                  max_input_tokens=MAX_INPUT_TOKENS, rate_limit_burst=10_000))
    client = TestClient(app)
    for thread in ("one", "two", "three"):
        ask(client, keys["alice"], QUESTION, thread)
    listed = client.get("/conversations", headers=bearer(keys["alice"])).json()["conversations"]
    assert len(listed) == 2 and {c["conversation_id"] for c in listed} == {"two", "three"}  # the newest started
    assert all(len(c["title"]) <= 20 and c["title"].endswith("…") for c in listed)


def test_the_page_files_ship_with_the_package():
    """Every file of the page is package data (pyproject.toml), and every one is served: a module
    the page imports but the server does not serve would be refused without a key."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["keel.server"]
    on_disk = {path.name for path in Path(str(WEB_FOLDER)).iterdir() if path.is_file()}
    served_files = {name for name, _ in PAGE_ASSETS.values()}
    assert on_disk == served_files
    for name in on_disk:
        assert any(fnmatch.fnmatch(f"web/{name}", pattern) for pattern in globs), name
    imports = set()
    for name in on_disk:
        if name.endswith(".js"):
            imports |= set(re.findall(r"from \"\./([\w.]+)\"", (Path(str(WEB_FOLDER)) / name).read_text()))
    assert imports <= served_files
