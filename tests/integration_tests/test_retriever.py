"""KeelParentRetriever on real Redis Stack and real all-MiniLM-L6-v2 embeddings."""

from __future__ import annotations

import json
import uuid

import pytest

from keel.core.configuration import Configuration
from keel.loaders.pipeline import ingest
from keel.retrievers.parent_document import KeelParentRetriever
from keel.stores.chunk_store import RedisChunkStore
from tests.pdf_factory import make_pdf
from tests.varden_guide import ISLAND_REPORT_PAGES

BAKERY = [
    "Recipes of the Harbour Bakery. Sourdough needs a starter fed with flour and water every day.",
    "Cinnamon buns are baked at 200 degrees for twelve minutes and glazed with sugar syrup.",
]


@pytest.fixture(scope="module")
def store(make_module_store):
    return make_module_store(parent_chunk_tokens=120, child_chunk_tokens=24, child_chunk_overlap=4)


@pytest.fixture(scope="module")
def library(store, tmp_path_factory):
    """Two users; each has a file named report.pdf, with different content."""
    folder = tmp_path_factory.mktemp("retriever")
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    (folder / "alice").mkdir()
    (folder / "bob").mkdir()
    island = make_pdf(folder / "alice" / "report.pdf", ISLAND_REPORT_PAGES)
    bakery = make_pdf(folder / "alice" / "bakery.pdf", BAKERY)
    bob_report = make_pdf(folder / "bob" / "report.pdf", BAKERY)
    first = ingest([island, bakery], store, store.cfg, user_id=alice, conversation_id="conv-a")
    second = ingest([bob_report], store, store.cfg, user_id=bob)
    assert first.errors == [] and second.errors == []
    return {"alice": alice, "bob": bob, "island_id": first.doc_ids[0], "bakery_id": first.doc_ids[1]}


def test_the_page_that_answers_comes_first_with_its_scores(store, library):
    retriever = KeelParentRetriever(store=store, user_id=library["alice"])
    parents = retriever.invoke("Who built the lighthouse?")
    top = parents[0]
    assert "Mara Holt" in top.page_content
    assert top.metadata["page"] == 2 and top.metadata["source"] == "report.pdf"
    assert top.metadata["doc_id"] == library["island_id"]
    scores = [p.metadata["score"] for p in parents]
    assert scores == sorted(scores, reverse=True)
    for parent in parents:
        meta = parent.metadata
        assert meta["child_hits"] >= 1 and 0 < meta["max_similarity"] <= 1.0001
        assert meta["score"] >= meta["max_similarity"] - 1e-9
        assert meta["user_id"] == library["alice"]
    assert len({p.id for p in parents}) == len(parents)


def test_filters_by_document_and_conversation(store, library):
    only_bakery = KeelParentRetriever(store=store, user_id=library["alice"], doc_ids=[library["bakery_id"]])
    assert {p.metadata["doc_id"] for p in only_bakery.invoke("lighthouse")} == {library["bakery_id"]}
    wrong_conversation = KeelParentRetriever(store=store, user_id=library["alice"], conversation_id="conv-b")
    assert wrong_conversation.invoke("lighthouse") == []
    right_conversation = KeelParentRetriever(store=store, user_id=library["alice"], conversation_id="conv-a", k_children=2)
    hits = right_conversation.invoke("How long are cinnamon buns baked?")
    assert hits and sum(p.metadata["child_hits"] for p in hits) <= 2
    assert "Cinnamon" in hits[0].page_content


def test_a_user_never_gets_another_users_parents(store, library):
    bob = KeelParentRetriever(store=store, user_id=library["bob"])
    results = bob.invoke("Who built the Varden lighthouse in 1874?")
    assert results, "bob has his own report.pdf"
    assert all(p.metadata["user_id"] == library["bob"] for p in results)
    assert not any("Mara Holt" in p.page_content for p in results)
    stranger = KeelParentRetriever(store=store, user_id="nobody-" + uuid.uuid4().hex[:6])
    assert stranger.invoke("lighthouse") == []


# --- streaming, k sizing, sources, page expansion ----------------------------------------------


def test_stream_yields_parents_one_by_one_in_score_order_with_callbacks(store, library):
    from langchain_core.callbacks import BaseCallbackHandler

    class Recorder(BaseCallbackHandler):
        started = ended = 0
        documents: list = []

        def on_retriever_start(self, *args, **kwargs):
            Recorder.started += 1

        def on_retriever_end(self, documents, **kwargs):
            Recorder.ended += 1
            Recorder.documents = documents

    retriever = KeelParentRetriever(store=store, user_id=library["alice"])
    chunks = list(retriever.stream("Who built the lighthouse?", config={"callbacks": [Recorder()]}))
    assert len(chunks) >= 2 and all(len(chunk) == 1 for chunk in chunks)
    streamed = [chunk[0] for chunk in chunks]
    assert [p.id for p in streamed] == [p.id for p in retriever.invoke("Who built the lighthouse?")]
    scores = [p.metadata["score"] for p in streamed]
    assert scores == sorted(scores, reverse=True)
    assert (Recorder.started, Recorder.ended) == (1, 1) and [p.id for p in Recorder.documents] == [p.id for p in streamed]

    first = next(iter(retriever.stream("Who built the lighthouse?")))
    assert "Mara Holt" in first[0].page_content


def test_children_per_search_come_from_the_logistic_k_of_the_window(store, library):
    from keel.retrievers.factory import default_retriever
    from keel.retrievers.k_sizing import k_for_config

    small = Configuration(user_id=library["alice"], llm_context_window=2048)
    large = Configuration(user_id=library["alice"], llm_context_window=131_072)
    assert default_retriever(small, store.embeddings).k_children == k_for_config(small)
    assert default_retriever(large, store.embeddings).k_children == k_for_config(large) > k_for_config(small)
    fixed = Configuration(user_id=library["alice"], retrieval_k_sizing="fixed", retrieval_k_children=3)
    assert default_retriever(fixed, store.embeddings).k_children == 3
    # the k really bounds the children searched
    three = KeelParentRetriever(store=store, user_id=library["alice"], k_children=3)
    assert sum(p.metadata["child_hits"] for p in three.invoke("lighthouse school ferry bakery")) == 3
    unbounded = KeelParentRetriever(store=store, user_id=library["alice"])
    assert unbounded.k == k_for_config(store.cfg)


def test_sources_filter_limits_to_the_named_files(store, library):
    only = KeelParentRetriever(store=store, user_id=library["alice"], sources=["bakery.pdf"])
    assert {p.metadata["source"] for p in only.invoke("lighthouse")} == {"bakery.pdf"}
    assert KeelParentRetriever(store=store, user_id=library["alice"], sources=["bakery.pdf|*"]).invoke("lighthouse") == []
    assert KeelParentRetriever(store=store, user_id=library["alice"], sources=[]).invoke("lighthouse") == []


def test_page_expansion_adds_the_neighbouring_pages_after_the_hits(store, library):
    top_only = KeelParentRetriever(store=store, user_id=library["alice"], k_children=1, doc_ids=[library["island_id"]])
    hits = top_only.invoke("Who built the lighthouse?")
    assert [p.metadata["page"] for p in hits] == [2]
    expanded = KeelParentRetriever(
        store=store, user_id=library["alice"], k_children=1, doc_ids=[library["island_id"]], page_expansion=1
    ).invoke("Who built the lighthouse?")
    assert [p.metadata["page"] for p in expanded] == [2, 1, 3]
    hit, *neighbours = expanded
    for neighbour in neighbours:
        assert neighbour.metadata["expanded_from"] == hit.id
        assert neighbour.metadata["doc_id"] == library["island_id"]
        assert neighbour.metadata["user_id"] == library["alice"]
        assert neighbour.metadata["max_similarity"] == hit.metadata["max_similarity"]
    assert len({p.id for p in expanded}) == 3
    # radius 0 adds nothing; pages already among the hits are not repeated
    assert top_only.expand_pages(hits, 0) == []
    assert top_only.expand_pages(expanded, 1) == []


def test_page_expansion_never_reaches_another_users_pages(store, library):
    bob = KeelParentRetriever(store=store, user_id=library["bob"], k_children=1, page_expansion=1)
    results = bob.invoke("How long are cinnamon buns baked?")
    assert results and all(p.metadata["user_id"] == library["bob"] for p in results)
    # bob asks to expand alice's page (same doc id and page): his own user filter finds nothing
    alice_hit = KeelParentRetriever(store=store, user_id=library["alice"], k_children=1).invoke("lighthouse")[0]
    assert bob.expand_pages([alice_hit], 1) == []


def test_sub_questions_are_embedded_once_for_all_scopes(store, library):
    from langchain_core.embeddings import Embeddings

    from keel.retrievers.fanout import embed_queries, search_parallel

    class Counting(Embeddings):
        calls: list = []

        def embed_documents(self, texts):
            return store.embeddings.embed_documents(texts)

        def embed_query(self, text):
            Counting.calls.append(text)
            return store.embeddings.embed_query(text)

    counted = RedisChunkStore(store.client, Counting(), store.cfg)
    counted._dim = store.dim  # no dimension probe in the count
    scopes = [[library["island_id"]], [library["bakery_id"]], None]
    tasks = [(KeelParentRetriever(store=counted, user_id=library["alice"], doc_ids=scope), question)
             for scope in scopes for question in ("Who built the lighthouse?", "How long are buns baked?")]
    results = search_parallel(tasks)
    assert sorted(Counting.calls) == ["How long are buns baked?", "Who built the lighthouse?"]
    plain = [KeelParentRetriever(store=store, user_id=library["alice"], doc_ids=scope).invoke(question)
             for (retriever, question), scope in zip(tasks, [s for s in scopes for _ in range(2)])]
    assert [[p.id for p in r] for r in results] == [[p.id for p in r] for r in plain]
    # the batched vectors are the ones embed_query gives
    batched = embed_queries(store.embeddings, ["Who built the lighthouse?", "bread"])
    single = store.embeddings.embed_query("bread")
    assert max(abs(a - b) for a, b in zip(batched[1], single)) < 1e-5


def test_parents_are_fetched_in_one_round_trip(store, library, monkeypatch):
    """One FT.SEARCH and one MGET for all parents: no per-parent GET, no pipeline."""
    import dataclasses

    import redis

    quiet = RedisChunkStore(store.client, store.embeddings, dataclasses.replace(store.cfg, ttl_refresh_interval_seconds=10**9))
    quiet._dim = store.dim
    retriever = KeelParentRetriever(store=quiet, user_id=library["alice"])
    vector = store.embeddings.embed_query("Who built the lighthouse and what is baked?")
    retriever.invoke("warm-up", query_embedding=vector)  # the TTL refresh is due once, then throttled
    commands: list[str] = []
    original = store.client.execute_command

    def spy(*args, **options):
        commands.append(str(args[0]).upper())
        return original(*args, **options)

    monkeypatch.setattr(store.client, "execute_command", spy)
    monkeypatch.setattr(redis.client.Pipeline, "execute", lambda *a, **k: commands.append("PIPELINE") or [])
    parents = retriever.invoke("Who built the lighthouse and what is baked?", query_embedding=vector)
    assert len(parents) >= 2
    assert commands == ["FT.SEARCH", "MGET"]


def test_retrieving_a_document_renews_its_ttl(store, tmp_path_factory, redis_client):
    import dataclasses

    cfg = dataclasses.replace(store.cfg, ttl_seconds=1000, ttl_refresh_interval_seconds=3600)
    fresh = RedisChunkStore(store.client, store.embeddings, cfg)
    user = f"ttl-{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("ttl")
    pdfs = [make_pdf(folder / "island.pdf", ISLAND_REPORT_PAGES), make_pdf(folder / "bakery.pdf", BAKERY)]
    report = ingest(pdfs, fresh, cfg, user_id=user)
    island_id, bakery_id = report.doc_ids

    def keys_of(doc_id):  # the manifest and every child and parent key it lists
        manifest = fresh._manifest_key(user, doc_id)
        return [manifest, *json.loads(redis_client.hget(manifest, "keys"))]

    # Shortened, not nearly expired: with 10 s a slow machine let keys vanish mid-test.
    short = 300
    for key in keys_of(island_id) + keys_of(bakery_id):
        redis_client.expire(key, short)
    hits = KeelParentRetriever(store=fresh, user_id=user, doc_ids=[island_id]).invoke("Who built the lighthouse?")
    assert hits and {p.metadata["doc_id"] for p in hits} == {island_id}
    assert all(redis_client.ttl(key) > 900 for key in keys_of(island_id)), "children, parents and manifest renewed"
    assert all(0 < redis_client.ttl(key) <= short for key in keys_of(bakery_id)), "a document not retrieved is left alone"
    # throttled: within the refresh interval a second retrieval costs no refresh
    for key in keys_of(island_id):
        redis_client.expire(key, short)
    KeelParentRetriever(store=fresh, user_id=user, doc_ids=[island_id]).invoke("Who built the lighthouse?")
    assert all(0 < redis_client.ttl(key) <= short for key in keys_of(island_id))
    # with interval 0, every retrieval renews
    eager = RedisChunkStore(store.client, store.embeddings, dataclasses.replace(cfg, ttl_refresh_interval_seconds=0))
    KeelParentRetriever(store=eager, user_id=user, doc_ids=[island_id]).invoke("Who built the lighthouse?")
    assert all(redis_client.ttl(key) > 900 for key in keys_of(island_id))
    for doc_id in (island_id, bakery_id):
        fresh.delete_document(user, doc_id)


LOOKALIKES = (
    "Zentrix arms. The ZR-500 industrial arm lifts up to 1,200 kilograms and costs 95,000 euros.\n\n"
    "Zentrix arms. The ZR-500 arm runs for 6 hours on one charge; its weight is 900 kilograms.\n\n"
    "Zentrix arms. The ZR-500 ships with a safety cage and a two-year warranty.\n\n"
    "Zentrix arms. The ZR-200 desktop arm lifts up to 25 kilograms and costs 12,500 euros."
)


@pytest.mark.real
def test_a_question_naming_a_code_gets_that_entitys_passage_first(store, tmp_path):
    """Look-alike passages embed almost alike; the code named in the question is also searched as
    text, so the ZR-200's passage comes first, not a ZR-500 one that happens to be closer."""
    user = f"lookalike-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "arms.md"
    path.write_text(LOOKALIKES, encoding="utf-8")
    ingest([path], store, store.cfg, user_id=user)
    question = "How much does the ZR-200 arm cost and how much can it lift?"

    def first_child(boost: float) -> str:
        hits = store.search_children(store.embeddings.embed_query(question), 2, user, exact_terms=["ZR-200"],
                                     exact_term_boost=boost)
        return hits[0][0].page_content

    assert "ZR-500" in first_child(0.0), "the look-alike is closer by similarity alone"
    assert "ZR-200" in first_child(1.0)
    boosted = KeelParentRetriever(store=store, user_id=user, k_children=2, exact_term_boost=1.0)
    assert "ZR-200" in boosted.invoke(question)[0].page_content
    assert all(0 < similarity <= 1 for _, similarity in store.search_children(
        store.embeddings.embed_query(question), 4, user, exact_terms=["ZR-200"], exact_term_boost=1.0))


SPEC_GUIDE = """# Vela robot vacuums

## Specifications

| Specification | Vela V20 | Vela V25 |
| --- | --- | --- |
| Weight | 3.4 kg | 3.9 kg |
| Charging time | about 4 hours | about 5 hours |
| Price (RRP) | €299 | €449 |

## What's in the box

**Vela V25:** the robot, the Auto-Empty Dock with two dust bags, two side brushes and a mop pad.
"""


@pytest.mark.real
def test_a_markdown_spec_table_is_stored_as_rows_that_say_whose_value_is_whose(store, tmp_path):
    """Ingested as `keel ingest` does and searched in real Redis with the real embeddings: the weight
    row comes back saying which weight is the V20's, and the extractive answer quotes the V20's alone;
    the V25's dock, which the guide gives no weight for, gets no quote."""
    from keel.checks.answer_checks import best_supported_sentences
    from keel.checks.answer_fit import quoted_about_asked, sentence_fits
    from keel.checks.question_coverage import context_vocabulary
    from keel.checks.statements import statements

    user = f"specs-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "vela.md"
    path.write_text(SPEC_GUIDE, encoding="utf-8")
    ingest([path], store, store.cfg, user_id=user)
    retriever = KeelParentRetriever(store=store, user_id=user, k_children=2)

    def extractive(question: str) -> list[str]:
        passages = [(n, doc.page_content) for n, doc in enumerate(retriever.invoke(question), start=1)]
        context = statements(text for _, text in passages)
        vocabulary = context_vocabulary(context)

        def similarities(q: str, sentences: list[str]) -> list[float]:
            vectors = store.embeddings.embed_documents(sentences)
            asked = store.embeddings.embed_query(q)
            return [sum(a * b for a, b in zip(asked, vector)) for vector in vectors]

        return best_supported_sentences(
            question, passages, 1, similarities,
            lambda s: sentence_fits(s, question, context, vocabulary, store.cfg.min_question_coverage),
            lambda s: quoted_about_asked(s, question))

    stored = retriever.invoke("How much does the Vela V20 weigh?")[0].page_content
    assert "Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg" in stored
    assert extractive("How much does the Vela V20 weigh?") == ["Specification: Weight | Vela V20: 3.4 kg [Source 1]"]
    assert extractive("How much does the Vela V25's Auto-Empty Dock weigh?") == []
