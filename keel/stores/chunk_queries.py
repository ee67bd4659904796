"""The RediSearch queries over child chunks, built only from validated, escaped tag values.

Every query starts with the user's uuid clause, so no filter can reach another user's chunks;
the other filters (conversation, documents, sources, pages) only narrow it further. Values go
through stores.tag_filters, never straight into the query string.
"""

from __future__ import annotations

import re

from collections.abc import Sequence

from redis.commands.search.query import Query

from keel.stores.tag_filters import clean_tag_text, tag_equals, tag_in, validate_tag_id

DISTANCE_FIELD = "vector_distance"
NEIGHBOUR_FIELDS = ("parent_id", "doc_id", "page", "chunk_index")


class EmptyFilter(Exception):
    """A filter that can match nothing (an empty list of doc ids or sources): skip the query."""


def filter_clause(
    user_id: str,
    conversation_id: str | None = None,
    doc_ids: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    parent_ids: Sequence[str] | None = None,
) -> str:
    """``(@uuid:{u} [@conversation_id:{c}] [@doc_id:{d1|d2}] [@source:{s1|s2}] [@parent_id:{p1|p2}])``.

    ``doc_ids=[]``, ``sources=[]`` or ``parent_ids=[]`` raise EmptyFilter: an empty list means
    "none", never "any"."""
    clauses = [tag_equals("uuid", validate_tag_id("user_id", user_id))]
    if conversation_id is not None:
        clauses.append(tag_equals("conversation_id", validate_tag_id("conversation_id", conversation_id)))
    if doc_ids is not None:
        clauses.append(_id_list_clause("doc_id", doc_ids))
    if sources is not None:
        if isinstance(sources, str):
            raise TypeError("sources must be a list of file names, not one string")
        cleaned = [clean_tag_text(str(source)) for source in sources]
        if not cleaned or not all(cleaned):
            if not cleaned:
                raise EmptyFilter
            raise ValueError(f"a source name must not be empty or blank: {list(sources)!r}")
        clauses.append(tag_in("source", cleaned))
    if parent_ids is not None:
        clauses.append(_id_list_clause("parent_id", parent_ids))
    return f"({' '.join(clauses)})"


def _id_list_clause(field: str, ids: Sequence[str]) -> str:
    """``@field:{a|b}`` for a list of ids, each validated; one string or an empty list is refused."""
    if isinstance(ids, str):
        raise TypeError(f"{field}s must be a list of {field.replace('_', ' ')}s, not one string")
    if not ids:
        raise EmptyFilter
    return tag_in(field, [validate_tag_id(field, value) for value in ids])


def phrase_clause(terms: Sequence[str]) -> str:
    """``@text:("zr 200"|"ax3000")``: children whose text holds any of ``terms`` as a phrase of
    words (RediSearch splits "ZR-200" at the hyphen, so it is matched as the words "zr 200")."""
    phrases = []
    for term in terms:
        words = re.findall(r"[A-Za-z0-9]+", term)
        if words:
            phrases.append('"' + " ".join(w.lower() for w in words) + '"')
    if not phrases:
        raise EmptyFilter
    return f"@text:({'|'.join(dict.fromkeys(phrases))})"


def knn_query(clause: str, k: int, return_fields: Sequence[str], ef_runtime: int | None = None) -> Query:
    """The ``k`` nearest children passing ``clause``, nearest first (vector passed as $vec).
    ``ef_runtime`` overrides an HNSW index's EF_RUNTIME for this query."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    ef = f" EF_RUNTIME {int(ef_runtime)}" if ef_runtime else ""
    return (
        Query(f"{clause}=>[KNN {k} @embedding $vec{ef} AS {DISTANCE_FIELD}]")
        .sort_by(DISTANCE_FIELD)
        .return_fields(*return_fields, DISTANCE_FIELD)
        .paging(0, k)
        .dialect(2)
    )


def neighbour_query(user_id: str, anchors: Sequence[tuple[str, int]], radius: int) -> Query:
    """Children on pages ``page-radius .. page+radius`` of each (doc_id, page) anchor of the user.

    One query for all anchors: ``@uuid:{u} ((@doc_id:{d} @page:[lo hi]) | ...)``. Unpaged: read it
    with ``all_pages`` so no child is silently left out."""
    if not anchors:
        raise EmptyFilter
    if not isinstance(radius, int) or radius < 0:
        raise ValueError(f"page expansion radius must be an integer >= 0, got {radius!r}")
    ranges = []
    for doc_id, page in dict.fromkeys(anchors):
        page = int(page)
        ranges.append(f"({tag_equals('doc_id', validate_tag_id('doc_id', doc_id))} @page:[{max(1, page - radius)} {page + radius}])")
    user = tag_equals("uuid", validate_tag_id("user_id", user_id))
    return (
        Query(f"{user} ({' | '.join(ranges)})")
        .return_fields(*NEIGHBOUR_FIELDS, "uuid")
        .dialect(2)
    )


def all_pages(search, query: Query, page_size: int) -> list:
    """Every row of a non-KNN ``query``, read ``page_size`` rows at a time (never silently capped).

    ``search`` is ``client.ft(index)``; paging re-runs the query with a moving offset."""
    if not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page size must be a positive integer, got {page_size!r}")
    rows: list = []
    offset = 0
    while True:
        result = search.search(query.paging(offset, page_size))
        rows.extend(result.docs)
        offset += page_size
        if offset >= result.total or not result.docs:
            return rows
