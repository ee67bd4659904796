"""How the parent-document retriever ranks parents from their children's hits, without Redis; the retriever on
real Redis Stack and real embeddings is in integration_tests/test_retriever.py."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from keel.retrievers.parent_document import rank_parents


def test_rank_parents_sums_child_similarities():
    def child(parent):
        return Document(page_content="", metadata={"parent_id": parent})

    hits = [(child("p1"), 0.9), (child("p2"), 0.8), (child("p2"), 0.7), (child("p3"), 0.2)]
    assert rank_parents(hits) == [
        ("p2", pytest.approx(1.5), 0.8, 2),
        ("p1", 0.9, 0.9, 1),
        ("p3", 0.2, 0.2, 1),
    ]
