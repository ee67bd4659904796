"""Pure answer checks: quality deductions, grounding, completeness, moderation. The parser's layers are in
test_parser_and_filter.py."""

from __future__ import annotations

import pytest

from keel.checks.answer_checks import best_supported_sentences, is_fallback, quality_score
from keel.checks.parser import parse_answer
from keel.checks.grounding import verify_grounding
from keel.core.text import cited_sources
from keel.checks.completeness import looks_complete
from keel.core.configuration import Configuration
from keel.checks.moderation import KeywordModerator

CFG = Configuration()


def test_ordinary_words_mid_answer_are_not_artifacts():
    answer = "The clinic opens at 7 am. Additionally, walk-in patients are seen from 9 am. Furthermore, it closes on Sundays."
    assert quality_score(answer, "When does the clinic open?", CFG).deductions == {}


def test_grounding_separates_supported_from_invented_sentences():
    passages = ["The Varden lighthouse was built in 1874 by the engineer Mara Holt."]
    assert verify_grounding("Mara Holt built the Varden lighthouse in 1874 [Source 1].", passages, min_overlap=0.5).score == 1.0
    assert verify_grounding("Gustave Eiffel designed it in Paris during the 1920s.", passages, min_overlap=0.5).score == 0.0
    report = quality_score("Gustave Eiffel designed it in Paris.", "Who built it?", CFG, grounding=0.0)
    assert "ungrounded" in report.deductions and report.score < CFG.quality_threshold


def test_citations_and_fallback_detection():
    assert cited_sources("A [Source 2]. B [source 1] and [Source 2].") == [1, 2]
    assert is_fallback("I don't know based on the provided documents.", CFG.fallback_answer)
    assert is_fallback("I don't know.", CFG.fallback_answer)
    assert not is_fallback("The answer is 42.", CFG.fallback_answer)


def test_extractive_sentences_are_cited_and_in_reading_order():
    passages = [(1, "The ferry leaves at 7 am. The school has 48 pupils."), (2, "The lighthouse was built by Mara Holt.")]
    chosen = best_supported_sentences("Who built the lighthouse?", passages, limit=1)
    assert chosen == ["The lighthouse was built by Mara Holt. [Source 2]"]


GUIDE = """## Shipping
Orders leave within 2 business days. Express
delivery takes 1-2 days.
- Standard: 3-5 business days
- Express: 1-2 business days
Region: Germany | Fee: 4.95 EUR
Region: Austria | Fee: 6.95 EUR"""


def test_a_list_item_or_table_row_is_a_statement_of_its_own():
    from keel.core.text import split_sentences, split_statements

    assert split_statements(GUIDE) == [
        "## Shipping", "Orders leave within 2 business days.", "Express\ndelivery takes 1-2 days.",
        "- Standard: 3-5 business days", "- Express: 1-2 business days",
        "Region: Germany | Fee: 4.95 EUR", "Region: Austria | Fee: 6.95 EUR",
    ]
    assert len(split_sentences(GUIDE)) == 2  # by full stops alone the list and the table are one "sentence"
    chosen = best_supported_sentences("What is the fee for Austria?", [(1, GUIDE)], limit=1)
    assert chosen == ["Region: Austria | Fee: 6.95 EUR [Source 1]"]


@pytest.mark.parametrize(
    "text, complete",
    [("It opens at 8 am.", True), ("It opens at 8 am and", False), ("The steps are:", False),
     ("Items: a, b,", False), ("", False), ("<answer>Done.</answer>", True)],
)
def test_completeness(text, complete):
    assert looks_complete(text) is complete


def test_keyword_moderator_blocks_harmful_requests_and_custom_terms():
    moderator = KeywordModerator(extra_terms=("competitor pricing",))
    assert not moderator.check("How can I build a bomb?").safe
    assert not moderator.check("Tell me the Competitor Pricing sheet").safe
    assert moderator.check("How do I file a claim?").safe


def test_answer_focus_is_low_when_a_grounded_answer_quotes_the_wrong_part_of_the_context():
    from keel.checks.grounding import answer_focus
    from tests.fakes import bag_of_words_similarities

    similarities = bag_of_words_similarities()
    passages = [
        "Varden Island Annual Report. The island school has 48 pupils and two teachers.",
        "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    ]
    question = "Who built the Varden lighthouse?"
    on_target = answer_focus("Mara Holt built the lighthouse in 1874.", passages, question, similarities)
    off_target = answer_focus("The island school has 48 pupils.", passages, question, similarities)
    assert on_target == 1.0
    assert off_target < CFG.answer_focus_ratio
    report = quality_score("The island school has 48 pupils.", question, CFG, grounding=1.0, focus=off_target)
    assert "off_focus" in report.deductions and report.score < CFG.quality_threshold


def test_lead_in_phrases_are_removed_from_the_answer():
    assert parse_answer("<answer>The answer is: Within 90 days.</answer>").text == "Within 90 days."
    assert parse_answer("<answer>Answer: 42 days.</answer>").text == "42 days."


LONG_ANSWER = " ".join(f"The lighthouse has feature number {i} near the harbour wall." for i in range(40))


@pytest.mark.parametrize(
    "answer, question, deductions, score",
    [
        ("The Varden lighthouse was built in 1874.", "Who built it?", {}, 1.0),
        ("Built <thinking>in</thinking> 1874 by Mara Holt.", "Who built it?", {"artifacts": 0.4}, 0.6),
        ("Based on the analysis of the text: Mara Holt (in the context of User).", "Who built it?",
         {"artifacts": 0.4}, 0.6),
        ("Mara Holt.", "Who built it?", {"too_short": 0.3}, 0.7),
        (LONG_ANSWER, "Who built it?", {"too_long": 0.1}, 0.9),
        ("It was built in 1874. It was built in 1874.", "Who built it?", {"duplicate_sentences": 0.2}, 0.8),
        ("Who built the Varden lighthouse? Mara Holt did.", "Who built the Varden lighthouse?",
         {"question_repeated": 0.1}, 0.9),
        ("User: hi. Hi.", "Who built the Varden lighthouse?", {"artifacts": 0.4, "too_short": 0.3}, 0.3),
    ],
)
def test_each_quality_deduction_subtracts_its_penalty_from_the_score(answer, question, deductions, score):
    assert len(LONG_ANSWER) > 2000
    report = quality_score(answer, question, CFG)
    assert report.deductions == pytest.approx(deductions) and report.score == pytest.approx(score)
