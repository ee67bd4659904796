"""Relevance that reads the question's topic words: an embedding of a small model ranks the line
naming the company above the line that says what was asked about it."""

from __future__ import annotations

from keel.checks.answer_topic import topic_relevance, topic_shares
from keel.checks.grounding import answer_focus
from keel.core.configuration import Configuration

PAGE = ("Registered name: Alder Clinic B.V.\n"
        "The clinic was founded in 2009 in Leiden by Ana Ruiz.\n"
        "Today Alder Clinic employs about 120 people.")


def company_first(question: str, sentences: list[str]) -> list[float]:
    """An embedding that reads a line naming Alder Clinic as closest to any question about it."""
    return [0.58 if "Today" in s else 0.68 if "Alder Clinic" in s else 0.40 for s in sentences]


def test_a_sentence_saying_the_questions_topic_words_gains_their_share():
    question = "In which year was Alder Clinic founded?"  # topic: found (year is the answer's type)
    assert topic_shares(question, PAGE.split("\n")) == [0.0, 1.0, 0.0]
    boosted = topic_relevance(company_first, 0.2)(question, PAGE.split("\n"))
    assert [round(score, 2) for score in boosted] == [0.68, 0.60, 0.58]
    assert topic_relevance(company_first, 0.0) is company_first


def test_the_founding_year_is_on_focus_once_the_topic_words_count():
    question, ratio = "In which year was Alder Clinic founded?", Configuration().answer_focus_ratio
    assert answer_focus("2009", [PAGE], question, company_first) < ratio
    assert answer_focus("2009", [PAGE], question, topic_relevance(company_first, 0.2)) >= ratio
