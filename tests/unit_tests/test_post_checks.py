"""The post-generation checks (citations, indicator phrases, length), each with passing and failing examples."""

from __future__ import annotations

from keel.checks.post_checks import post_generation_reasons
from keel.core.configuration import Configuration

PASSAGES = ["The clinic opens at 7 am on weekdays.", "Walk-in patients are usually seen before 11 am."]


def test_a_cited_grounded_answer_passes_every_check():
    cfg = Configuration(require_citations=True)
    assert post_generation_reasons("The clinic opens at 7 am [Source 1].", PASSAGES, cfg) == []


def test_missing_citations_only_matter_when_required():
    assert post_generation_reasons("It opens at 7 am.", PASSAGES, Configuration(require_citations=True)) == [
        "no_citations"
    ]
    assert post_generation_reasons("It opens at 7 am.", PASSAGES, Configuration(require_citations=False)) == []


def test_citations_of_sources_that_do_not_exist():
    reasons = post_generation_reasons("It opens at 7 am [Source 3] [Source 1].", PASSAGES, Configuration())
    assert reasons == ["unknown_citation:3"]


def test_indicator_phrases_unless_the_context_uses_them():
    reasons = post_generation_reasons("As we know, clinics typically open early.", PASSAGES, Configuration())
    assert reasons == ["hallucination_indicator:as we know", "hallucination_indicator:typically"]
    assert post_generation_reasons("Walk-ins are usually seen before 11 am.", PASSAGES, Configuration()) == []


def test_answer_much_longer_than_its_context():
    long_answer = "The clinic opens at 7 am. " * 10
    assert "longer_than_context" in post_generation_reasons(long_answer, PASSAGES, Configuration())
