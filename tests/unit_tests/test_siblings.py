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
HOURS = ("## Riverside branch\n\nThe Riverside branch is open on Saturdays from 9 am to 1 pm.\n\n"
         "## Hillcrest branch\n\nThe Hillcrest branch is open on weekdays from 8 am to 6 pm.")
GRADES = ("## Probation\n\n"
          "Band: Band A | Probation period: 3 months | Notice after probation: 2 weeks\n"
          "Band: Band B | Probation period: 6 months | Notice after probation: 4 weeks")


def test_a_statement_about_a_sibling_in_the_same_frame_is_named():
    question = "When is the Hillcrest branch open on Saturdays?"
    assert sibling_instead(question, "The Riverside branch is open on Saturdays from 9 am to 1 pm.") == [
        "hillcrest>riverside"]
    assert sibling_instead(question, "The Hillcrest branch is open on Saturdays from 10 am to 2 pm.") == []


def test_designators_and_figures_are_qualifiers_after_their_word():
    assert sibling_instead("How long is the probation period for band D employees?",
                           "Band: Band B | Probation period: 6 months") == ["D>B"]
    assert sibling_instead("What is the hotel limit per night for a Zone 3 city?",
                           "City zone: Zone 2 | Limit per night: £95") == ["3>2"]
    assert sibling_instead("What is the hotel limit per night for a Zone 2 city?",
                           "City zone: Zone 2 | Limit per night: £95") == []


def test_a_range_says_every_designator_in_it():
    question = "How long is a band B team leader paid half pay?"
    assert sibling_instead(question, "Band: Bands A to C | Full pay: 4 weeks | Then half pay: 4 weeks") == []
    assert sibling_instead(question, "Band: Bands D to E | Full pay: 8 weeks | Then half pay: 8 weeks") == ["B>D"]


def test_a_heading_says_whom_a_statement_is_about():
    question = "When is the Hillcrest branch open on Saturdays?"
    found = {s.text: statement_about_sibling(question, s) for s in statements([HOURS])}
    assert found["The Riverside branch is open on Saturdays from 9 am to 1 pm."] == ["hillcrest>riverside"]
    under = statements(["## Riverside branch\n\nOpen on Saturdays from 9 am to 1 pm."])[-1]
    assert statement_about_sibling(question, under) == ["hillcrest>riverside"]


def test_what_is_no_qualifier_makes_no_sibling():
    """Owners, verb forms, hyphenated words said in parts and words told apart only by grammar."""
    assert sibling_instead("What is the toolkit's repository of models called?",
                           "A rich repository of pre-trained models (Model Shelf).") == []
    assert sibling_instead("On what date were the supplies in the letter delivered?",
                           "300 chairs delivered on March 3, 2024.") == []
    assert sibling_instead("What is the response target for a high-priority P2 request?",
                           "Priority: P2 - High priority | Response target: 1 day") == []
    assert sibling_instead("Which question would a proof that X equals Y settle?",
                           "The X versus Y question is one of the open questions.") == []


def test_frames_end_at_cells_and_clauses():
    fillers = frame_fillers(["Part 2: Devices, company phones | Lost or stolen phones"])
    assert "device" not in fillers.get((">", "company"), set())
    assert fillers[(">", "phone")] >= {"company", "stolen"} - {"stolen"}


def test_the_answer_check_refuses_a_siblings_line_and_passes_the_asked_ones():
    question = "How long is the probation period for band B employees?"
    wrong = fit_reasons("The probation period is 3 months. [Source 1]", question, [GRADES], CFG)
    right = fit_reasons("The probation period is 6 months. [Source 1]", question, [GRADES], CFG)
    assert "about_a_sibling:B>A" in wrong
    assert not any(reason.startswith("about_a_sibling") for reason in right)
    off = dataclasses.replace(CFG, refuse_sibling_evidence=False)
    assert not any(reason.startswith("about_a_sibling")
                   for reason in fit_reasons("The probation period is 3 months. [Source 1]", question, [GRADES], off))


def test_an_answer_whose_words_no_line_holds_is_left_to_grounding():
    assert rests_on_siblings("Probation lasts a fortnight for apprentices.", "How long is probation for band B?",
                             statements([GRADES])) == []


def test_the_extractive_quote_skips_a_siblings_line():
    question = "When is the Hillcrest branch open on Saturdays?"
    context = statements([HOURS])
    line = "The Riverside branch is open on Saturdays from 9 am to 1 pm."
    assert sentence_fits(line, question, context) is True  # without the rule, the sibling's line fits
    assert sentence_fits(line, question, context, refuse_siblings=True) is False
    close = lambda _question, texts: [0.9] * len(texts)  # noqa: E731 (every line reads close)
    assert extractive_answer(question, [(1, HOURS)], CFG, close) == CFG.fallback_answer
    asked = "When is the Riverside branch open on Saturdays?"
    assert extractive_answer(asked, [(1, HOURS)], CFG, close).startswith(line)


def test_a_verb_before_its_object_is_no_qualifier():
    """"to broadly define complexity measures": define is a verb, not a kind of measure (English)."""
    assert sibling_instead("What is typically used to broadly define cost measures?",
                           "Cost measures are very generally defined by the cost axioms.") == []
    assert sibling_instead("Which policies cover band B staff?", "The policy covers band C staff.") == ["B>C"]


def test_for_example_names_no_condition():
    assert sibling_instead("What is the term for a task that a computer can solve?",
                           "For example, a computational problem is solved by a computer.") == []


def test_an_adjective_that_only_picks_a_thing_out_is_no_qualifier():
    """"a specific algorithm" said as "a particular algorithm" is a paraphrase, not a sibling."""
    assert sibling_instead("What is the name of a specific algorithm that solves the task?",
                           "A particular algorithm, the sieve, solves the task.") == []
    assert sibling_instead("What is the name of the fast algorithm that solves the task?",
                           "The slow algorithm, the sieve, solves the task.") == ["fast>slow"]
