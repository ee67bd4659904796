"""The redisvl queries over child chunks, built only from validated, escaped tag values.

Every query starts with the user's uuid filter, so no filter can reach another user's chunks;
the other filters (conversation, documents, sources, pages) only narrow it further. Values go
through stores.tag_filters (redisvl ``Tag`` filters with Keel's escaping), never straight into a
query string.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from functools import reduce

import numpy as np
from redisvl.query import FilterQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Num, Text

from keel.stores.chunk_index import VECTOR_FIELD
from keel.stores.tag_filters import clean_tag_text, tag_filter, validate_tag_id

DISTANCE_FIELD = VectorQuery.DISTANCE_ID
NEIGHBOUR_FIELDS = ("parent_id", "doc_id", "page", "chunk_index")


class EmptyFilter(Exception):
    """A filter that can match nothing (an empty list of doc ids or sources): skip the query."""


def child_filter(
    user_id: str,
    conversation_id: str | None = None,
    doc_ids: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    parent_ids: Sequence[str] | None = None,
) -> FilterExpression:
    """The user's children, narrowed by conversation, documents, sources (file names) and parents.

    ``doc_ids=[]``, ``sources=[]`` or ``parent_ids=[]`` raise EmptyFilter: an empty list means
    "none", never "any"."""
    expression = tag_filter("uuid", validate_tag_id("user_id", user_id))
    if conversation_id is not None:
        expression &= tag_filter("conversation_id", validate_tag_id("conversation_id", conversation_id))
    if doc_ids is not None:
        expression &= _id_list_filter("doc_id", doc_ids)
    if sources is not None:
        if isinstance(sources, str):
            raise TypeError("sources must be a list of file names, not one string")
        cleaned = [clean_tag_text(str(source)) for source in sources]
        if not cleaned:
            raise EmptyFilter
        if not all(cleaned):
            raise ValueError(f"a source name must not be empty or blank: {list(sources)!r}")
        expression &= tag_filter("source", cleaned)
    if parent_ids is not None:
        expression &= _id_list_filter("parent_id", parent_ids)
    return expression


def filter_clause(
    user_id: str,
    conversation_id: str | None = None,
    doc_ids: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    parent_ids: Sequence[str] | None = None,
) -> str:
    """``child_filter`` as a query string: ``(@uuid:{u} [@conversation_id:{c}] [@doc_id:{d1|d2}] ...)``."""
    return str(child_filter(user_id, conversation_id, doc_ids, sources, parent_ids))


def _id_list_filter(field: str, ids: Sequence[str]) -> FilterExpression:
    """``@field:{a|b}`` for a list of ids, each validated; one string or an empty list is refused."""
    if isinstance(ids, str):
        raise TypeError(f"{field}s must be a list of {field.replace('_', ' ')}s, not one string")
    if not ids:
        raise EmptyFilter
    return tag_filter(field, [validate_tag_id(field, value) for value in ids])


def phrase_filter(terms: Sequence[str]) -> FilterExpression:
    """Children whose text holds any of ``terms`` as a phrase of words (RediSearch splits
    "ZR-200" at the hyphen, so it is matched as the words "zr 200")."""
    phrases = []
    for term in terms:
        words = re.findall(r"[A-Za-z0-9]+", term)
        if words:
            phrases.append(" ".join(word.lower() for word in words))
    if not phrases:
        raise EmptyFilter
    return reduce(operator.or_, (Text("text") == phrase for phrase in dict.fromkeys(phrases)))


def phrase_clause(terms: Sequence[str]) -> str:
    """``phrase_filter`` as a query string: ``(@text:("zr 200") | @text:("ax3000"))``."""
    return str(phrase_filter(terms))


class ChildKNNQuery(VectorQuery):
    """redisvl's KNN query with the query vector passed as ``$vec``, the name Keel's queries have
    always given it (callers that run one through redis-py's search pass it so)."""

    VECTOR_PARAM = "vec"


def knn_query(
    clause: str | FilterExpression,
    k: int,
    return_fields: Sequence[str],
    ef_runtime: int | None = None,
    vector: np.ndarray | Sequence[float] | bytes = b"",
) -> VectorQuery:
    """The ``k`` nearest children passing ``clause``, nearest first, with their cosine distance.

    ``ef_runtime`` overrides an HNSW index's EF_RUNTIME for this query. ``vector`` is the query
    embedding; left out, the caller passes it as ``query_params`` ``vec`` to redis-py's search."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not isinstance(vector, bytes):
        vector = np.asarray(vector, dtype=np.float32).tobytes()
    return ChildKNNQuery(
        vector=vector,
        vector_field_name=VECTOR_FIELD,
        return_fields=list(return_fields),
        filter_expression=clause,
        num_results=k,
        ef_runtime=int(ef_runtime) if ef_runtime else None,
    )


def neighbour_query(user_id: str, anchors: Sequence[tuple[str, int]], radius: int) -> FilterQuery:
    """Children on pages ``page-radius .. page+radius`` of each (doc_id, page) anchor of the user.

    One query for all anchors: ``@uuid:{u} ((@doc_id:{d} @page:[lo hi]) | ...)``. Unpaged: read it
    with ``all_pages`` so no child is silently left out."""
    if not anchors:
        raise EmptyFilter
    if not isinstance(radius, int) or radius < 0:
        raise ValueError(f"page expansion radius must be an integer >= 0, got {radius!r}")
    ranges = [
        tag_filter("doc_id", validate_tag_id("doc_id", doc_id))
        & Num("page").between(max(1, int(page) - radius), int(page) + radius)
        for doc_id, page in dict.fromkeys(anchors)
    ]
    user = tag_filter("uuid", validate_tag_id("user_id", user_id))
    return FilterQuery(user & reduce(operator.or_, ranges), return_fields=[*NEIGHBOUR_FIELDS, "uuid"])


def child_vectors_query(user_id: str, parent_ids: Sequence[str]) -> FilterQuery:
    """The stored embeddings (raw FLOAT32 bytes, not decoded) of the user's children of ``parent_ids``."""
    query = FilterQuery(child_filter(user_id, parent_ids=list(dict.fromkeys(parent_ids))))
    return query.return_fields("uuid", "parent_id", VECTOR_FIELD, skip_decode=[VECTOR_FIELD])


def all_pages(search, query: FilterQuery, page_size: int) -> list[dict]:
    """Every row of a non-KNN ``query`` (a dict of its fields), read ``page_size`` rows at a time:
    never silently capped. ``search`` is the redisvl ``SearchIndex`` (redis-py's ``client.ft(index)``
    works too: both take ``search(query, query_params=...)``).

    Not redisvl's ``paginate``: it stops only at an empty page, so every read would cost one more
    round trip than stopping at the number of matches the server reports, as this does."""
    if not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page size must be a positive integer, got {page_size!r}")
    rows: list[dict] = []
    offset = 0
    while True:
        query.paging(offset, page_size)
        result = search.search(query, query_params=query.params)
        rows.extend(vars(document) for document in result.docs)
        offset += page_size
        if offset >= result.total or not result.docs:
            return rows
