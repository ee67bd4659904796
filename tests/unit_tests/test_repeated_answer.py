"""An answer that only repeats the last answer, to another question, answers the last question."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from keel.checks.repeated_answer import repeats_last_answer

HISTORY = [HumanMessage("What is the on-call allowance for the IT Service Desk?"),
           AIMessage("The IT Service Desk on-call allowance is £35 per night [Source 1].")]


def test_the_last_answer_again_for_another_question_is_a_repeat():
    assert repeats_last_answer("The IT Service Desk on-call allowance is £35 per night [Source 2].",
                               "What is the on-call allowance for Facilities and Maintenance?", HISTORY)
    assert repeats_last_answer("The IT Service Desk on-call allowance is £35 [Source 1].",  # a shorter form
                               "What is the on-call allowance for drivers?", HISTORY)


def test_an_answer_with_a_statement_of_its_own_is_not_a_repeat():
    assert not repeats_last_answer("The Facilities and Maintenance on-call allowance is £40 per night [Source 1].",
                                   "What is the on-call allowance for Facilities and Maintenance?", HISTORY)
    assert not repeats_last_answer("The IT Service Desk on-call allowance is £35 per night [Source 1]. Facilities "
                                   "staff receive £40 per night [Source 2].",
                                   "What is the on-call allowance for Facilities?", HISTORY)


def test_the_same_question_asked_again_may_get_the_same_answer():
    assert not repeats_last_answer(HISTORY[1].content, "What is the on-call allowance for the IT Service Desk?", HISTORY)
    assert not repeats_last_answer(HISTORY[1].content, "And the IT Service Desk on-call allowance, again?", HISTORY)


def test_without_an_earlier_answer_nothing_repeats():
    assert not repeats_last_answer("The allowance is £35 [Source 1].", "What is the allowance?", [])
    assert not repeats_last_answer("The allowance is £35 [Source 1].", "What is the allowance?", HISTORY[:1])
