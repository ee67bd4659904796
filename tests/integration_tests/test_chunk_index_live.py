"""The chunk index on the real Redis Stack is the redisvl schema the store declares: FT.INFO of the
live index, read back through redisvl, is that schema; and an index created the way Keel created
it before it used redisvl is accepted as it is, its documents searchable (no migration, no rebuild).
The declared schema and the queries without Redis are in unit_tests/test_chunk_index.py."""

from __future__ import annotations

import pytest
from redis.commands.search.field import NumericField, TagField, TextField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redisvl.index import SearchIndex

from keel.loaders.base import inheritable_metadata
from keel.models.embeddings import get_embedding_tokenizer
from keel.splitters import ParentChildSplitter
from langchain_core.documents import Document

TAGS = ("uuid", "conversation_id", "source", "doc_id", "parent_id")


@pytest.mark.parametrize("settings", [{}, {"vector_algorithm": "HNSW", "hnsw_m": 8, "hnsw_ef_construction": 50,
                                           "hnsw_ef_runtime": 20}], ids=["flat", "hnsw"])
def test_the_live_index_is_the_schema_the_store_declares(make_store, redis_client, settings):
    store = make_store(**settings)
    store.ensure_index()
    live = SearchIndex.from_existing(store.index_name, redis_client=redis_client).schema.to_dict()
    declared = store.index_schema.to_dict()
    if settings:  # FT.INFO does not report an HNSW index's EF_RUNTIME: redisvl reads back its default
        for schema in (live, declared):
            next(field for field in schema["fields"] if field["name"] == "embedding")["attrs"].pop("ef_runtime")
    assert live == declared


def test_an_index_created_before_redisvl_is_used_as_it_is(make_store, redis_client):
    store = make_store()
    before = [
        TextField("text"),
        VectorField("embedding", "FLAT", {"TYPE": "FLOAT32", "DIM": store.dim, "DISTANCE_METRIC": "COSINE"}),
        *(TagField(name, separator="\x1f", case_sensitive=True) for name in TAGS),
        NumericField("page"),
    ]
    redis_client.ft(store.index_name).create_index(
        before, definition=IndexDefinition(prefix=[store.child_prefix], index_type=IndexType.HASH))
    live = SearchIndex.from_existing(store.index_name, redis_client=redis_client).schema
    assert live.to_dict() == store.index_schema.to_dict()

    pages = [Document(page_content="The ferry leaves every morning at seven.",
                      metadata=inheritable_metadata(user_id="u-old", conversation_id=None, source="old.pdf",
                                                    doc_id="o" * 24, page=1, total_pages=1))]
    parents, children = ParentChildSplitter(200, 40, 8, get_embedding_tokenizer()).split_documents(pages)
    store.add_document(parents, children)
    hits = store.search_children(store.embeddings.embed_query("When does the ferry leave?"), 3, "u-old")
    assert [hit.page_content for hit, _ in hits] == ["The ferry leaves every morning at seven."]
    assert hits[0][1] > 0.5
    assert redis_client.ft(store.index_name).info()["num_docs"] in (1, "1", b"1")
