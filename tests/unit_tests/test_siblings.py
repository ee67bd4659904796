"""The sibling rule: the statement an answer rests on must be about what was asked, not about a
look-alike the documents write in the same frame (keel/checks/siblings.py), in the answer check and
in the extractive quote."""

from __future__ import annotations

import dataclasses

from keel.chains.extractive import extractive_answer
from keel.checks.answer_fit import fit_reasons, sentence_fits
from keel.checks.siblings import frame_fillers, rests_on_siblings, sibling_instead, statement_about_sibling
from keel.checks.statements import statements
from keel.core.configuration import Configuration

CFG = Configuration()
HOURS = ("## Eastgate clinic\n\nThe Eastgate clinic is open on Saturdays from 9 am to 1 pm.\n\n"
         "## Millbank clinic\n\nThe Millbank clinic is open on weekdays from 8 am to 6 pm.")
GRADES = ("## Probation\n\n"
          "Grade: Grade A | Probation period: 3 months | Notice after probation: 2 weeks\n"
          "Grade: Grade B | Probation period: 6 months | Notice after probation: 4 weeks")


def test_a_statement_about_a_sibling_in_the_same_frame_is_named():
    question = "When is the Millbank clinic open on Saturdays?"
    assert sibling_instead(question, "The Eastgate clinic is open on Saturdays from 9 am to 1 pm.") == [
        "millbank>eastgate"]
    assert sibling_instead(question, "The Millbank clinic is open on Saturdays from 10 am to 2 pm.") == []


def test_designators_and_figures_are_qualifiers_after_their_word():
    assert sibling_instead("How long is the probation period for grade E employees?",
                           "Grade: Grade B | Probation period: 6 months") == ["E>B"]
    assert sibling_instead("What is the hotel limit per night for a Tier 4 city?",
                           "City tier: Tier 3 | Limit per night: £95") == ["4>3"]
    assert sibling_instead("What is the hotel limit per night for a Tier 3 city?",
                           "City tier: Tier 3 | Limit per night: £95") == []


def test_a_range_says_every_designator_in_it():
    question = "How long is a grade B team leader paid half pay?"
    assert sibling_instead(question, "Grade: Grades A to C | Full pay: 4 weeks | Then half pay: 4 weeks") == []
    assert sibling_instead(question, "Grade: Grades D to E | Full pay: 8 weeks | Then half pay: 8 weeks") == ["B>D"]


def test_a_heading_says_whom_a_statement_is_about():
    question = "When is the Millbank clinic open on Saturdays?"
    found = {s.text: statement_about_sibling(question, s) for s in statements([HOURS])}
    assert found["The Eastgate clinic is open on Saturdays from 9 am to 1 pm."] == ["millbank>eastgate"]
    under = statements(["## Eastgate clinic\n\nOpen on Saturdays from 9 am to 1 pm."])[-1]
    assert statement_about_sibling(question, under) == ["millbank>eastgate"]


def test_what_is_no_qualifier_makes_no_sibling():
    """Owners, verb forms, hyphenated words said in parts and words told apart only by grammar."""
    assert sibling_instead("What is LayoutParser's repository of models called?",
                           "A rich repository of pre-trained models (Model Zoo).") == []
    assert sibling_instead("On what date were the supplies in the memo delivered?",
                           "200 laptops delivered on January 23, 2023.") == []
    assert sibling_instead("What is the resolution target for a high-priority P2 ticket?",
                           "Priority: P2 - High priority | Resolution target: 1 working day") == []
    assert sibling_instead("Which problem would a proof that P equals NP help to solve?",
                           "The P versus NP problem is one of the Millennium Prize Problems.") == []


def test_frames_end_at_cells_and_clauses():
    fillers = frame_fillers(["Part 2: Devices, company phones | Lost or stolen phones"])
    assert "device" not in fillers.get((">", "company"), set())
    assert fillers[(">", "phone")] >= {"company", "stolen"} - {"stolen"}


def test_the_answer_check_refuses_a_siblings_line_and_passes_the_asked_ones():
    question = "How long is the probation period for grade B employees?"
    wrong = fit_reasons("The probation period is 3 months. [Source 1]", question, [GRADES], CFG)
    right = fit_reasons("The probation period is 6 months. [Source 1]", question, [GRADES], CFG)
    assert "about_a_sibling:B>A" in wrong
    assert not any(reason.startswith("about_a_sibling") for reason in right)
    off = dataclasses.replace(CFG, refuse_sibling_evidence=False)
    assert not any(reason.startswith("about_a_sibling")
                   for reason in fit_reasons("The probation period is 3 months. [Source 1]", question, [GRADES], off))


def test_an_answer_whose_words_no_line_holds_is_left_to_grounding():
    assert rests_on_siblings("Probation lasts a fortnight for apprentices.", "How long is probation for grade B?",
                             statements([GRADES])) == []


def test_the_extractive_quote_skips_a_siblings_line():
    question = "When is the Millbank clinic open on Saturdays?"
    context = statements([HOURS])
    line = "The Eastgate clinic is open on Saturdays from 9 am to 1 pm."
    assert sentence_fits(line, question, context) is True  # without the rule, the sibling's line fits
    assert sentence_fits(line, question, context, refuse_siblings=True) is False
    close = lambda _question, texts: [0.9] * len(texts)  # noqa: E731 (every line reads close)
    assert extractive_answer(question, [(1, HOURS)], CFG, close) == CFG.fallback_answer
    asked = "When is the Eastgate clinic open on Saturdays?"
    assert extractive_answer(asked, [(1, HOURS)], CFG, close).startswith(line)


def test_a_verb_before_its_object_is_no_qualifier():
    """"to broadly define complexity measures": define is a verb, not a kind of measure (English)."""
    assert sibling_instead("What is typically used to broadly define complexity measures?",
                           "Complexity measures are very generally defined by the Blum complexity axioms.") == []
    assert sibling_instead("Which policies cover grade B staff?", "The policy covers grade C staff.") == ["B>C"]


def test_for_example_names_no_condition():
    assert sibling_instead("What is the term for a task that a computer can solve?",
                           "For example, a computational problem is solved by a computer.") == []
