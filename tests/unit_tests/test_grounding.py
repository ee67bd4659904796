"""Sentence-level grounding verification and the HaluEval evaluation built on it, with fakes; the
`keel eval halueval` command and the ../shared/data rows are in integration_tests/test_grounding.py."""

from __future__ import annotations

import pytest

from keel.checks.grounding import critical_tokens, verify_grounding
from keel.evals import halueval
from keel.core.configuration import Configuration
from tests.eval_files import write_halueval_rows
from tests.fakes import bag_of_words_similarities

CONTEXT = ["The Varden lighthouse was built in 1874 by the engineer Mara Holt. Its lamp is visible for 22 miles."]


def test_supported_sentence_passes_and_invented_names_or_numbers_fail():
    good = verify_grounding("Mara Holt built the lighthouse in 1874.", CONTEXT, question="Who built it?")
    assert good.score == 1.0
    wrong_year = verify_grounding("Mara Holt built the lighthouse in 1875.", CONTEXT)
    assert wrong_year.score == 0.0 and wrong_year.sentences[0].missing == ["1875"]
    wrong_name = verify_grounding("Gustave Eiffel built the lighthouse in 1874.", CONTEXT)
    assert wrong_name.score == 0.0 and "gustave" in wrong_name.sentences[0].missing


def test_score_is_the_share_of_grounded_sentences():
    report = verify_grounding("Mara Holt built it in 1874. It was repainted blue by Ada Lind in 1990.", CONTEXT)
    assert report.score == 0.5
    assert [v.grounded for v in report.sentences] == [True, False]


def test_paraphrase_passes_only_through_similarity_and_never_with_a_missing_name():
    similarities = bag_of_words_similarities()
    paraphrase = "The lamp of the lighthouse is visible for 22 miles at night from ships"
    without = verify_grounding(paraphrase, CONTEXT, min_overlap=0.9)
    with_similarity = verify_grounding(paraphrase, CONTEXT, min_overlap=0.9, similarities=similarities,
                                       min_similarity=0.55)
    assert without.score == 0.0 and with_similarity.score == 1.0
    invented = verify_grounding("The lamp of the lighthouse is visible for 40 miles.", CONTEXT,
                                similarities=similarities, min_similarity=0.0)
    assert invented.score == 0.0  # a missing number is never waived


@pytest.mark.parametrize(
    ("answer", "grounded"),
    [
        ("20.", False),  # a part of "20,000" is not a figure the memo states
        ("2 laptops.", False),
        ("In 2024.", False),
        ("20,000.", True),
        ("20000 bottles.", True),  # the same figure without its thousands separator
        ("200 laptops.", True),
        ("On 12 May 2023.", True),
    ],
)
def test_a_number_is_grounded_only_as_a_whole_figure_of_the_context(answer, grounded):
    memo = ["The shipment delivered 20,000 bottles of water and 200 laptops on Monday 12 May 2023."]
    report = verify_grounding(answer, memo, question="How many bottles of water were delivered?")
    assert (report.score == 1.0) is grounded, report.sentences


def test_words_from_the_question_are_not_evidence():
    context = ["The school has 48 pupils."]
    assert verify_grounding("Mara Holt designed the lighthouse.", context, question="Did Mara Holt design the lighthouse?").score == 1.0
    assert verify_grounding("Ada Lind designed the lighthouse.", context, question="Did Mara Holt design the lighthouse?").score == 0.0


def test_sentence_openers_are_not_names_but_other_capitalised_words_are():
    assert critical_tokens("However, the lamp is bright.") == set()
    assert critical_tokens("Westchester County in 1990.") == {"westchester", "county", "1990"}


def test_halueval_metrics_on_rows_the_test_writes(tmp_path):
    rows = halueval.load_rows(write_halueval_rows(tmp_path / "halu.jsonl"))
    matched = [r for r in rows if r.length_matched]
    assert len(matched) == 2
    result = halueval.evaluate(matched, Configuration())
    assert result == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "false_rejection_rate": 0.0, "rows": 2}


def test_halueval_rejects_a_malformed_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "only a question"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        halueval.load_rows(bad)
