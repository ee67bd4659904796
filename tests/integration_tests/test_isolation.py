"""User A never sees user B's chunks: two users ingest files of the same name (and the same
bytes), ask with each other's source names and doc ids, with injection attempts in every tag
value, and all at the same time. Real Redis Stack, real embeddings, real ingestion."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import HumanMessage

from keel.core.configuration import Configuration
from keel.loaders.pipeline import ingest
from keel.models.embeddings import get_embeddings
from keel.components import Components
from keel.nodes.route_query import route_query
from keel.retrievers.parent_document import KeelParentRetriever
from keel.stores.langchain_store import KeelVectorStore
from tests.pdf_factory import make_pdf

pytestmark = pytest.mark.real

ALICE_PAGES = ["Alice's report. The vault code is 4411.", "The harbour master is Ada Quill.", "Alice's ferry leaves at 6 am."]
BOB_PAGES = ["Bob's report. The vault code is 9922.", "The harbour master is Bo Reed.", "Bob's ferry leaves at 9 pm."]
SHARED_PAGES = ["A public timetable: the museum opens at 10 am.", "The museum closes at 5 pm."]
INJECTIONS = ["*", "a|b", "x}", "{x", "a b", "a-b", "a.b", 'q"uote', "it's", "@uuid:{x}", "a\\b", "-negated", "(group)", "%fuzzy%"]


@pytest.fixture(scope="module")
def two_users(redis_url, keel_config, tmp_path_factory):
    from keel.stores.connections import get_vector_store

    cfg = Configuration(
        redis_url=redis_url, keel_home=keel_config.keel_home, index_name=f"test_iso_{uuid.uuid4().hex[:6]}",
        parent_chunk_tokens=120, child_chunk_tokens=24, child_chunk_overlap=4,
    )
    store = get_vector_store(cfg, get_embeddings(cfg))
    root = tmp_path_factory.mktemp("isolation")
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    docs = {}
    for user, pages in ((alice, ALICE_PAGES), (bob, BOB_PAGES)):
        folder = root / user
        folder.mkdir()
        report = make_pdf(folder / "report.pdf", pages)  # same file name, different content
        shared = make_pdf(folder / "timetable.pdf", SHARED_PAGES)  # same name and same bytes
        result = ingest([report, shared], store, cfg, user_id=user, conversation_id="same-conversation")
        assert result.errors == [] and result.documents == 2
        docs[user] = {"report": result.doc_ids[0], "timetable": result.doc_ids[1]}
    assert docs[alice]["timetable"] == docs[bob]["timetable"], "identical bytes give the same doc id"
    assert docs[alice]["report"] != docs[bob]["report"]
    yield cfg, store, alice, bob, docs
    store.client.ft(cfg.index_name).dropindex(delete_documents=True)


def owners(documents) -> set[str]:
    return {d.metadata["user_id"] for d in documents}


def test_same_file_names_and_same_doc_ids_stay_apart(two_users):
    cfg, store, alice, bob, docs = two_users
    for user, other_code, own_code in ((alice, "9922", "4411"), (bob, "4411", "9922")):
        retriever = KeelParentRetriever(store=store, user_id=user)
        found = retriever.invoke("What is the vault code?")
        assert owners(found) == {user}
        text = " ".join(d.page_content for d in found)
        assert own_code in text and other_code not in text
        by_name = KeelParentRetriever(store=store, user_id=user, sources=["report.pdf"]).invoke("vault code")
        assert owners(by_name) == {user} and by_name
        shared = KeelParentRetriever(store=store, user_id=user, doc_ids=[docs[alice]["timetable"]]).invoke("museum")
        assert owners(shared) == {user} and shared
        other_report = docs[bob if user == alice else alice]["report"]
        assert KeelParentRetriever(store=store, user_id=user, doc_ids=[other_report]).invoke("vault code") == []
    # one user deleting the shared document leaves the other's copy whole
    assert store.delete_document(bob, docs[bob]["timetable"]) is True
    assert KeelParentRetriever(store=store, user_id=alice, doc_ids=[docs[alice]["timetable"]]).invoke("museum")
    assert KeelParentRetriever(store=store, user_id=bob, doc_ids=[docs[bob]["timetable"]]).invoke("museum") == []


@pytest.mark.parametrize("attack", INJECTIONS)
def test_injection_attempts_in_tag_values_neither_break_nor_widen_a_query(two_users, attack):
    cfg, store, alice, bob, docs = two_users
    for kwargs in ({"user_id": attack}, {"user_id": f"{alice}|{bob}"}, {"user_id": f"{alice}}} | @uuid:{{{bob}"}):
        assert KeelParentRetriever(store=store, **kwargs).invoke("vault code") == []
    for field in ("sources", "doc_ids"):
        for value in (attack, f"report.pdf|{attack}", f"{docs[alice]['report']}|{docs[bob]['report']}"):
            found = KeelParentRetriever(store=store, user_id=alice, **{field: [value]}).invoke("vault code")
            assert found == [], (field, value)
    scoped = KeelParentRetriever(store=store, user_id=alice, conversation_id=f"same-conversation|{attack}")
    assert scoped.invoke("vault code") == []
    lc = KeelVectorStore(store, user_id=alice)
    assert lc.similarity_search("vault", k=10, filter={"source": attack}) == []
    assert owners(lc.similarity_search("vault", k=10, filter={"source": ["report.pdf", attack]})) <= {alice}


def test_routing_and_the_follow_up_cache_are_per_user_even_in_the_same_conversation(two_users):
    cfg, store, alice, bob, docs = two_users
    embeddings = get_embeddings()

    def ask(user, question):
        config = {"configurable": {"redis_url": cfg.redis_url, "keel_home": cfg.keel_home, "index_name": cfg.index_name,
                                   "user_id": user, "thread_id": "same-conversation"}}
        state = {"question": question, "messages": [HumanMessage(question)]}
        return route_query(state, config, components=Components(embeddings=embeddings))

    alice_turn = ask(alice, "What is the vault code?")
    bob_turn = ask(bob, "Could you say that again, more briefly please?")  # would hit a shared cache
    assert "4411" in " ".join(p["text"] for p in alice_turn["passages"])
    assert all(p["doc_id"] in docs[bob].values() for p in bob_turn["passages"])
    assert "4411" not in " ".join(p["text"] for p in bob_turn["passages"])


def test_concurrent_queries_of_two_users_never_cross(two_users):
    cfg, store, alice, bob, _ = two_users
    questions = ["What is the vault code?", "Who is the harbour master?", "When does the ferry leave?"]
    expected = {alice: ("4411", "Ada Quill", "6 am"), bob: ("9922", "Bo Reed", "9 pm")}
    start = threading.Barrier(8)

    def ask(job: int):
        user = alice if job % 2 else bob
        retriever = KeelParentRetriever(store=store, user_id=user, k_children=4)
        start.wait(timeout=30)
        results = []
        for round_ in range(6):
            question = questions[(job + round_) % 3]
            found = retriever.invoke(question)
            results.append((user, question, found))
        return results

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = [row for rows in pool.map(ask, range(8)) for row in rows]
    assert len(outcomes) == 48
    for user, question, found in outcomes:
        assert found and owners(found) == {user}, (user, question)
        other = bob if user == alice else alice
        text = " ".join(d.page_content for d in found)
        assert not any(fact in text for fact in expected[other]), (user, question)
