"""What an answer claims with its figures: a range no line states, a condition turned around
(keel/checks/figure_claims.py), and how the answer-fit checks name them."""

from __future__ import annotations

import pytest

from keel.checks.answer_fit import fit_reasons
from keel.checks.answer_types import expected_answer_type
from keel.checks.figure_claims import ranges_not_stated, reversed_conditions
from keel.checks.statements import statements
from keel.core.configuration import Configuration

MAINTENANCE = """## Maintenance
Part: Filter | Clean: every week | Replace: every 2 months
Part: Side brush | Clean: every 2 weeks | Replace: every 3 to 6 months"""

DELIVERY = """## Delivery costs
- Standard delivery is free for orders over EUR 50. Below EUR 50 it costs EUR 4.95.
- Express delivery: 1-2 business days, ordered before 15:00.

## Damaged parcels
If a parcel arrives damaged, tell us within 48 hours of delivery."""

CFG = Configuration()


@pytest.mark.parametrize("answer, unstated", [
    ("Replace the filter every 2 to 3 months.", ["2-3"]),     # the filter's 2 and the brush's 3
    ("Replace the side brush every 3 to 6 months.", []),
    ("Replace the side brush every 3-6 months.", []),         # the same range, written otherwise
    ("Replace the filter every 2 months.", []),
    ("Replace the mop pad every 4 to 6 weeks.", []),         # stated "between 4 and 6 weeks"
    ("Replace the dust bag every 1-2 months.", ["1-2"]),
    ("Call 800-555-1234 on 2024-05-12.", []),                 # a phone number or a date is no range
])
def test_a_range_must_be_stated_as_a_range(answer, unstated):
    context = statements([MAINTENANCE + "\nPart: Mop pad | Replace: between 4 and 6 weeks"])
    assert ranges_not_stated(answer, context) == unstated


@pytest.mark.parametrize("answer, reversed_figures", [
    ("Standard delivery is free for orders over EUR 50.", ["50"]),
    ("Below EUR 50 it costs EUR 4.95.", []),
    ("Standard delivery is free for orders over EUR 50; below EUR 50 it costs EUR 4.95.", []),  # both sides
    ("It costs EUR 4.95.", []),
    ("Standard delivery costs EUR 4.95 unless your order is over EUR 50.", []),  # "unless over" is "under"
    ("Orders of not more than EUR 50 pay EUR 4.95.", []),                         # "not more than" is "under"
    ("Orders of no less than EUR 50 ship free.", ["50"]),
])
def test_an_answer_about_the_other_side_of_the_asked_condition_is_refused(answer, reversed_figures):
    question = "How much does standard delivery cost for orders under EUR 50?"
    assert reversed_conditions(answer, question) == reversed_figures
    refused = [r for r in fit_reasons(answer, question, [DELIVERY], CFG) if r.startswith("figure_about_something_else")]
    assert bool(refused) == bool(reversed_figures)


def test_how_soon_and_how_quickly_ask_for_a_time():
    assert expected_answer_type("How soon after delivery must I report a damaged parcel?") == ("time", "duration")
    assert expected_answer_type("How quickly are support emails answered?") == ("time", "duration")


def test_a_time_figure_from_another_line_is_not_saved_by_the_word_within():
    """"within" is grammar, not a value: the damaged-parcel line saying "within" does not make the
    express-delivery line's "2 business days" the answer to how soon a damage must be reported."""
    question = "How soon after delivery must I report a damaged parcel?"
    wrong = fit_reasons("A damaged parcel must be reported within 2 business days.", question, [DELIVERY], CFG)
    right = fit_reasons("Tell us within 48 hours of delivery.", question, [DELIVERY], CFG)
    assert "figure_about_something_else:2" in wrong
    assert right == []


def test_a_stitched_range_is_refused_as_a_figure_from_another_statement():
    reasons = fit_reasons("The filter should be replaced every 2 to 3 months.",
                          "How often should the Vela filter be replaced?", [MAINTENANCE], CFG)
    assert "figure_from_another_statement:2-3" in reasons


def test_a_list_items_later_sentence_is_read_with_its_lead_only_when_it_goes_on_from_it():
    """"Below EUR 50 it costs EUR 4.95." prices standard delivery (its item's lead); "Express
    delivery costs EUR 9.90." names its own subject, so it does not price standard delivery."""
    page = ("## Delivery costs\n- Standard delivery is free for orders over EUR 50. Below EUR 50 it costs EUR 4.95. "
            "Express delivery costs EUR 9.90.\n1. Register the vacuum in the app. It adds a year of warranty.")
    items = {s.text: s.item for s in statements([page])}
    assert items["Below EUR 50 it costs EUR 4.95."] == "- Standard delivery is free for orders over EUR 50."
    assert items["Express delivery costs EUR 9.90."] == ""
    assert items["It adds a year of warranty."] == "1. Register the vacuum in the app."  # a numbered item
    question = "How much does standard delivery cost for orders under EUR 50?"
    assert fit_reasons("Below EUR 50 it costs EUR 4.95.", question, [page], CFG) == []
    assert any(r.startswith("figure_about_something_else")
               for r in fit_reasons("Standard delivery costs EUR 9.90.", question, [page], CFG))
