"""RedisChunkStore on the real embedded Redis Stack: schema, atomic replace, deletes, TTL,
user isolation and tag-injection attempts. Tag escaping without Redis is in unit_tests/test_tag_filters.py."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from keel.loaders.base import inheritable_metadata
from keel.models.embeddings import get_embedding_tokenizer, get_embeddings
from keel.splitters import ParentChildSplitter
from keel.stores.chunk_index import IndexSchemaError
from keel.stores.chunk_store import RedisChunkStore

# --- the real store ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embeddings():
    return get_embeddings()


@pytest.fixture(scope="module")
def splitter():
    return ParentChildSplitter(200, 40, 8, get_embedding_tokenizer())


def chunks(splitter, user: str, pages: list[str], source="doc.pdf", doc_id=None, conversation=None):
    doc_id = doc_id or uuid.uuid4().hex[:24]
    documents = [
        Document(
            page_content=text,
            metadata=inheritable_metadata(
                user_id=user, conversation_id=conversation, source=source, doc_id=doc_id, page=i + 1, total_pages=len(pages)
            ),
        )
        for i, text in enumerate(pages)
    ]
    return splitter.split_documents(documents)


def search(store, user, text, k=10, **filters):
    return store.search_children(store.embeddings.embed_query(text), k, user, **filters)


def count_children(redis_client, store, user) -> int:
    from redis.commands.search.query import Query

    from keel.stores.tag_filters import tag_equals

    return redis_client.ft(store.index_name).search(Query(tag_equals("uuid", user)).no_content().dialect(2)).total


def test_index_tags_every_filter_field_case_kept_and_stores_cosine_float32_vectors(make_store, redis_client):
    store = make_store()
    store.ensure_index()
    info = redis_client.ft(store.index_name).info()
    attributes = {attr[1]: dict(zip(attr[::2], attr[1::2])) for attr in info["attributes"]}
    types = {name: attribute["type"] for name, attribute in attributes.items()}
    assert types == {"text": "TEXT", "embedding": "VECTOR", "uuid": "TAG", "conversation_id": "TAG", "source": "TAG",
                     "doc_id": "TAG", "parent_id": "TAG", "page": "NUMERIC"}
    vector = attributes["embedding"]
    assert (vector["algorithm"], vector["data_type"], vector["distance_metric"], int(vector["dim"])) == (
        "FLAT", "FLOAT32", "COSINE", 384)
    for name in ("uuid", "conversation_id", "source", "doc_id", "parent_id"):  # one tag per value, case kept
        raw = next(attr for attr in info["attributes"] if attr[1] == name)
        assert attributes[name]["SEPARATOR"] == "\x1f" and "CASESENSITIVE" in raw, name
    definition = info["index_definition"]
    if isinstance(definition, list):
        definition = dict(zip(definition[::2], definition[1::2]))
    assert definition["key_type"] == "HASH" and definition["prefixes"] == [f"{store.index_name}:child:"]

    hnsw = make_store(vector_algorithm="HNSW")
    hnsw.ensure_index()
    hnsw_vector = [a for a in redis_client.ft(hnsw.index_name).info()["attributes"] if a[1] == "embedding"][0]
    hnsw_fields = dict(zip(hnsw_vector[::2], hnsw_vector[1::2]))
    assert (hnsw_fields["algorithm"], hnsw_fields["data_type"], hnsw_fields["distance_metric"]) == ("HNSW", "FLOAT32", "COSINE")


def test_search_returns_cosine_similarity_best_first_with_metadata(make_store, splitter):
    store = make_store()
    parents, children = chunks(
        splitter, "u1", ["The ferry leaves every morning at seven.", "Bananas are rich in potassium."], conversation="c1"
    )
    assert store.add_document(parents, children) == len(children)
    hits = search(store, "u1", "The ferry leaves every morning at seven.")
    assert hits[0][0].page_content == "The ferry leaves every morning at seven."
    assert hits[0][1] == pytest.approx(1.0, abs=1e-3)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    meta = hits[0][0].metadata
    assert meta["user_id"] == "u1" and meta["conversation_id"] == "c1" and meta["page"] == 1
    assert meta["parent_id"] == parents[0].id and meta["doc_id"] == parents[0].metadata["doc_id"]
    assert hits[0][0].id == children[0].id


def test_ttl_is_set_on_children_parents_and_manifest(make_store, splitter, redis_client):
    store = make_store(ttl_seconds=1234)
    parents, children = chunks(splitter, "u-ttl", ["Some text to keep for a while."])
    store.add_document(parents, children)
    keys = list(redis_client.scan_iter(match=f"{store.index_name}:*"))
    assert len(keys) >= 4  # child, parent, manifest, user's doc set
    for key in keys:
        assert 0 < redis_client.ttl(key) <= 1234, key


def test_reingest_replaces_instead_of_duplicating(make_store, splitter, redis_client):
    store = make_store()
    long_text = " ".join(f"sentence number {i} about harbours." for i in range(60))
    first = chunks(splitter, "u2", [long_text], doc_id="d" * 24)
    store.add_document(*first)
    assert count_children(redis_client, store, "u2") == len(first[1]) > 3
    second = chunks(splitter, "u2", ["A much shorter replacement text."], doc_id="d" * 24)
    store.add_document(*second)
    assert count_children(redis_client, store, "u2") == len(second[1]) == 1
    assert store.get_parents([p.id for p in first[0]]) == store.get_parents([second[0][0].id])
    assert [d["children"] for d in store.list_documents("u2")] == [1]


def test_delete_and_list_documents(make_store, splitter, redis_client):
    store = make_store()
    a = chunks(splitter, "u3", ["Alpha document text."], source="a.pdf")
    b = chunks(splitter, "u3", ["Beta document text.", "Second page."], source="b.pdf")
    store.add_document(*a)
    store.add_document(*b)
    listed = store.list_documents("u3")
    assert [(d["source"], d["pages"], d["children"]) for d in listed] == [("a.pdf", 1, 1), ("b.pdf", 2, 2)]
    assert store.delete_document("u3", b[0][0].metadata["doc_id"]) is True
    assert store.delete_document("u3", b[0][0].metadata["doc_id"]) is False
    assert [d["source"] for d in store.list_documents("u3")] == ["a.pdf"]
    assert count_children(redis_client, store, "u3") == 1
    assert store.get_parents([p.id for p in b[0]]) == []


def test_get_parents_keeps_order_skips_missing_and_filters_by_user(make_store, splitter):
    store = make_store()
    parents, children = chunks(splitter, "u4", ["First page.", "Second page."])
    store.add_document(parents, children)
    ids = [parents[1].id, "no-such-parent", parents[0].id]
    assert [p.page_content for p in store.get_parents(ids)] == ["Second page.", "First page."]
    assert store.get_parents(ids, user_id="someone-else") == []


def test_a_failed_embedding_leaves_the_old_version_intact(make_store, splitter, embeddings, redis_client):
    class FailingOnSecondBatch(Embeddings):
        calls = 0

        def embed_documents(self, texts):
            FailingOnSecondBatch.calls += 1
            if FailingOnSecondBatch.calls > 1:
                raise RuntimeError("embedding server went away")
            return embeddings.embed_documents(texts)

        def embed_query(self, text):
            return embeddings.embed_query(text)

    store = make_store()
    old = chunks(splitter, "u5", ["The original text stays."], doc_id="e" * 24)
    store.add_document(*old)
    failing = make_store(FailingOnSecondBatch(), index_name=store.index_name, embedding_batch_size=2)
    new = chunks(splitter, "u5", [" ".join(f"replacement{i}" for i in range(200))], doc_id="e" * 24)
    assert len(new[1]) > 2
    with pytest.raises(RuntimeError, match="went away"):
        failing.add_document(*new)
    assert count_children(redis_client, store, "u5") == 1
    assert search(store, "u5", "original")[0][0].page_content == "The original text stays."


def test_an_index_built_for_another_embedding_size_is_refused(make_store):
    class Tiny(Embeddings):
        def embed_documents(self, texts):
            return [[1.0, 0.0, 0.0] for _ in texts]

        def embed_query(self, text):
            return [1.0, 0.0, 0.0]

    store = make_store()
    store.ensure_index()
    with pytest.raises(IndexSchemaError, match="384-dimensional"):
        make_store(Tiny(), index_name=store.index_name).ensure_index()


def test_users_never_see_each_other_even_with_injection_attempts(make_store, splitter, redis_client):
    store = make_store()
    users = ["a", "b", "a|b", "x", "x}", "*", "a b", "a-b", "Alice", "alice", 'q"uote', "{a}", "日本 語", "a,b"]
    for user in users:
        store.add_document(*chunks(splitter, user, [f"The secret of {user} is the harbour."], source="same-name.pdf"))
    for user in users:
        hits = search(store, user, "What is the secret of the harbour?")
        assert len(hits) == 1, (user, [h[0].metadata["user_id"] for h in hits])
        assert hits[0][0].metadata["user_id"] == user
        assert count_children(redis_client, store, user) == 1, f"the index filter itself widened for {user!r}"
        assert [d["source"] for d in store.list_documents(user)] == ["same-name.pdf"]


def test_conversation_and_doc_filters_are_escaped_too(make_store, splitter):
    store = make_store()
    first = chunks(splitter, "u6", ["Harbour notes one."], conversation="c-1")
    second = chunks(splitter, "u6", ["Harbour notes two."], conversation="c-1|c-2")
    store.add_document(*first)
    store.add_document(*second)
    assert {h[0].page_content for h in search(store, "u6", "harbour", conversation_id="c-1")} == {"Harbour notes one."}
    assert {h[0].page_content for h in search(store, "u6", "harbour", conversation_id="c-1|c-2")} == {"Harbour notes two."}
    assert search(store, "u6", "harbour", conversation_id="*") == []
    doc_one = first[0][0].metadata["doc_id"]
    assert {h[0].page_content for h in search(store, "u6", "harbour", doc_ids=[doc_one])} == {"Harbour notes one."}
    assert search(store, "u6", "harbour", doc_ids=[]) == []
    assert search(store, "u6", "harbour", doc_ids=[f"{doc_one}|*"]) == []


def test_a_comma_in_a_file_name_stays_one_tag(make_store, splitter, redis_client):
    store = make_store()
    store.add_document(*chunks(splitter, "u7", ["Quarterly numbers."], source="report, final.pdf"))
    from redis.commands.search.query import Query

    from keel.stores.tag_filters import tag_equals

    found = redis_client.ft(store.index_name).search(Query(tag_equals("source", "report, final.pdf")).dialect(2))
    assert found.total == 1
    assert redis_client.ft(store.index_name).search(Query(tag_equals("source", "report")).dialect(2)).total == 0


def test_bad_arguments_are_clear_errors(make_store, splitter):
    store = make_store()
    with pytest.raises(ValueError, match="user_id"):
        search(store, " a", "x")
    with pytest.raises(ValueError, match="k must be"):
        search(store, "a", "x", k=0)
    p1, c1 = chunks(splitter, "u8", ["One."])
    p2, c2 = chunks(splitter, "u9", ["Two."])
    with pytest.raises(ValueError, match="exactly one"):
        store.add_document(p1 + p2, c1 + c2)
    with pytest.raises(ValueError, match="at least one"):
        store.add_document(p1, [])


# --- HNSW, sources filter, TTL refresh, neighbouring pages ---------------------------------------


def test_hnsw_index_takes_its_parameters_and_finds_the_same_nearest_child(make_store, splitter, redis_client):
    flat = make_store()
    hnsw = make_store(vector_algorithm="HNSW", hnsw_m=8, hnsw_ef_construction=50, hnsw_ef_runtime=20)
    pages = ["The ferry leaves every morning at seven.", "Bananas are rich in potassium.", "The lighthouse is red."]
    for store in (flat, hnsw):
        store.add_document(*chunks(splitter, "u-hnsw", pages, doc_id="h" * 24))
    vector = [a for a in redis_client.ft(hnsw.index_name).info()["attributes"] if a[1] == "embedding"][0]
    params = dict(zip(vector[::2], vector[1::2]))
    assert int(params.get("M", params.get(b"M", 0))) == 8
    assert search(hnsw, "u-hnsw", "When does the ferry leave?")[0][0].page_content == pages[0]
    assert [h[0].id for h in search(hnsw, "u-hnsw", "ferry", k=3)] == [h[0].id for h in search(flat, "u-hnsw", "ferry", k=3)]
    with pytest.raises(ValueError, match="FLAT.*HNSW"):  # refused by the settings, naming both
        make_store(vector_algorithm="IVF").ensure_index()


SOURCE_NAMES = ["report.pdf", "report final.pdf", "report-final.pdf", "report.final.pdf", "{report}.pdf",
                "report|x.pdf", 'report "q".pdf', "report's.pdf", "r*port.pdf", "報告 書.pdf"]


def test_source_filters_match_exactly_the_named_file_whatever_its_characters(make_store, splitter):
    store = make_store()
    for name in SOURCE_NAMES:
        store.add_document(*chunks(splitter, "u-src", [f"Harbour notes from {name}."], source=name))
    for name in SOURCE_NAMES:
        hits = search(store, "u-src", "harbour notes", k=20, sources=[name])
        assert {h[0].metadata["source"] for h in hits} == {name}, name
    assert len(search(store, "u-src", "harbour", k=20, sources=SOURCE_NAMES[:2])) == 2
    for attack in ["report.pdf|report final.pdf", "*", "report*", "report.pdf} | @uuid:{u-src", "report.pdf}"]:
        assert search(store, "u-src", "harbour", k=20, sources=[attack]) == [], attack
    assert search(store, "u-src", "harbour", sources=[]) == []
    with pytest.raises(ValueError, match="source"):
        search(store, "u-src", "harbour", sources=["  "])


def test_refresh_ttl_renews_every_key_of_the_users_documents(make_store, splitter, redis_client):
    store = make_store(ttl_seconds=1000)
    first = chunks(splitter, "u-ttl2", ["First document, to refresh."], doc_id="f" * 24)
    second = chunks(splitter, "u-ttl2", ["Second document, to refresh too."], doc_id="g" * 24)
    other = chunks(splitter, "u-other", ["Another user's document."], doc_id="f" * 24)
    for parts in (first, second, other):
        store.add_document(*parts)
    keys = list(redis_client.scan_iter(match=f"{store.index_name}:*"))
    # Shortened, not nearly expired: with 10 s a slow machine let keys vanish before the refresh.
    short = 300
    for key in keys:
        redis_client.expire(key, short)
    assert store.refresh_ttl("u-ttl2", ["f" * 24]) == 1
    first_keys = [f"{store.index_name}:child:{c.id}" for c in first[1]] + [f"{store.index_name}:parent:{p.id}" for p in first[0]]
    assert all(redis_client.ttl(k) > 900 for k in first_keys)
    assert all(0 < redis_client.ttl(f"{store.index_name}:child:{c.id}") <= short for c in second[1] + other[1])
    assert store.refresh_ttl("u-ttl2") == 2
    assert all(redis_client.ttl(f"{store.index_name}:child:{c.id}") > 900 for c in second[1])
    assert all(0 < redis_client.ttl(f"{store.index_name}:child:{c.id}") <= short for c in other[1])
    assert store.refresh_ttl("nobody") == 0


def test_neighbour_parent_ids_are_the_users_pages_around_the_anchor(make_store, splitter):
    store = make_store()
    pages = [f"Page {n} of the long harbour report." for n in range(1, 6)]
    parents, children = chunks(splitter, "u-nb", pages, doc_id="n" * 24)
    store.add_document(parents, children)
    store.add_document(*chunks(splitter, "u-nb2", pages, doc_id="n" * 24))  # same doc id, other user
    around_three = store.neighbour_parent_ids("u-nb", [("n" * 24, 3)], radius=1)
    assert [(page, pid) for pid, _, page in around_three] == [(p.metadata["page"], p.id) for p in parents[1:4]]
    assert [page for _, _, page in store.neighbour_parent_ids("u-nb", [("n" * 24, 1), ("n" * 24, 5)], 1)] == [1, 2, 4, 5]
    assert store.neighbour_parent_ids("u-nb", [("n" * 24, 3)], radius=0) == []
    assert store.neighbour_parent_ids("u-nb", [("other" * 5, 3)], radius=1) == []


def test_non_knn_searches_read_every_page_instead_of_capping(make_store, splitter, embeddings):
    """Page expansion and the follow-up check read all rows, however small a page is."""
    import dataclasses

    import numpy as np

    store = make_store(search_page_size=1)
    words = "the harbour report describes tides ferries boats nets weather and the lighthouse keepers"
    pages = [f"Page {n}. " + " ".join([words] * 8) for n in range(1, 6)]  # several children per page
    parents, children = chunks(splitter, "u-pg", pages, doc_id="p" * 24)
    store.add_document(parents, children)
    found = store.neighbour_parent_ids("u-pg", [("p" * 24, 3)], radius=2)
    assert [page for _, _, page in found] == [1, 2, 3, 4, 5]
    vectors = store.child_vectors("u-pg", [p.id for p in parents])
    assert sum(len(rows) for rows in vectors.values()) == len(children) > len(parents)
    first = [c for c in children if c.metadata["parent_id"] == parents[0].id]
    assert vectors[parents[0].id].dtype == np.float32 and vectors[parents[0].id].shape[1] == store.dim
    assert store.child_vectors("someone-else", [p.id for p in parents]) == {}
    assert len(vectors[parents[0].id]) == len(first)
    wide = RedisChunkStore(store.client, embeddings, dataclasses.replace(store.cfg, search_page_size=1000))
    assert wide.neighbour_parent_ids("u-pg", [("p" * 24, 3)], radius=2) == found
    with pytest.raises(ValueError, match="page_size"):  # refused by the settings (search_page_size >= 1)
        RedisChunkStore(store.client, embeddings, dataclasses.replace(store.cfg, search_page_size=0)).neighbour_parent_ids(
            "u-pg", [("p" * 24, 3)], radius=1)
