"""The form of an accepted answer: it starts at a statement, reads as running text, cites every
sentence. The real memo PDF through the real loader is in integration_tests/test_answer_form_real.py."""

from __future__ import annotations

import pytest

from keel.chains.answer_form import is_fragment, tidy_answer

MEMO = {"number": 1, "source": "memo.pdf", "text": "May 5, 2023\nTo Whom it May Concern:\nThere were 20,000 bottles "
        "of water, 10,000 blankets, and 200 laptops delivered on January 23, \n2023. A total of 3 trucks were used "
        "for 15 hours.\nBest Regards,\nMallori\n"}
HOURS = {"number": 2, "source": "clinic.md", "text": "The Alder clinic is open from 9 am to 1 pm on Saturdays."}


@pytest.mark.parametrize("text", ["May 5, 2023", "5 May 2023 [Source 1]", "2023-05-05", "To Whom it May Concern:",
                                  "Dear Ms Holt,", "Best Regards,", "Opening hours", "Varden Island Annual Report"])
def test_dates_salutations_and_titles_are_fragments(text):
    assert is_fragment(text)


@pytest.mark.parametrize("text", ["There were 200 laptops delivered.", "Night shift: £2.00 per hour",
                                  "25 days", "The Alder clinic opens at 9 am [Source 2]."])
def test_statements_and_table_rows_are_not(text):
    assert not is_fragment(text)


def test_a_quote_starts_at_its_statement_and_its_wrapped_lines_are_joined():
    quoted = ("May 5, 2023\nTo Whom it May Concern:\nThere were 20,000 bottles of water, 10,000 blankets, and 200 "
              "laptops delivered on January 23, \n2023. [Source 1]")
    assert tidy_answer(quoted, [MEMO]) == ("There were 20,000 bottles of water, 10,000 blankets, and 200 laptops "
                                           "delivered on January 23, 2023 [Source 1].")


def test_a_date_quoted_with_its_citation_before_the_statement_is_dropped():
    quoted = "May 5, 2023 [Source 1] A total of 3 trucks were used for 15 hours. [Source 1]"
    assert tidy_answer(quoted, [MEMO]) == "A total of 3 trucks were used for 15 hours [Source 1]."


def test_a_leading_date_sentence_is_dropped_but_a_lone_answer_is_kept():
    assert tidy_answer("May 5, 2023 [Source 1]. A total of 3 trucks were used for 15 hours [Source 1].", [MEMO]) == \
        "A total of 3 trucks were used for 15 hours [Source 1]."
    assert tidy_answer("May 5, 2023 [Source 1]", [MEMO]) == "May 5, 2023 [Source 1]"


def test_a_sentence_without_a_citation_gets_the_passage_that_says_it():
    answer = "The Alder clinic is open from 9 am to 1 pm on Saturdays. A total of 3 trucks were used [Source 1]."
    assert tidy_answer(answer, [MEMO, HOURS]) == (
        "The Alder clinic is open from 9 am to 1 pm on Saturdays [Source 2]. A total of 3 trucks were used [Source 1].")


def test_a_sentence_no_passage_says_is_left_uncited():
    assert tidy_answer("Dragons bake bread on Tuesdays.", [MEMO, HOURS]) == "Dragons bake bread on Tuesdays."


def test_lists_and_tables_keep_their_lines():
    answer = "The fees:\n- Consultation: EUR 60 [Source 1]\n- Vaccination: EUR 25 [Source 1]"
    assert tidy_answer(answer, [MEMO]) == answer


def test_a_citation_inside_a_sentence_stays_there():
    answer = "The Alder clinic [Source 2] opens at 9 am on Saturdays. See section 4.2 [Source 2] for details."
    assert tidy_answer(answer, [HOURS]) == answer


def test_abbreviations_and_file_extensions_keep_their_stops():
    answer = "Keel reads .pdf and .docx files from the U.S. office [Source 1] and from Canada."
    assert tidy_answer(answer, [MEMO]) == answer


def test_a_leading_fragment_of_the_asked_type_is_the_answer_and_stays():
    answer = "May 5, 2023 [Source 1]\n\nIt was sent to all staff [Source 1]."
    assert tidy_answer(answer, [MEMO], "When was the memo sent?").startswith("May 5, 2023")
    assert tidy_answer(answer, [MEMO], "What was sent to all staff?") == "It was sent to all staff [Source 1]."


def test_a_line_that_introduces_a_list_stays():
    answer = "Children under 5 are covered for:\n\n- flu vaccinations [Source 1]\n- check-ups [Source 1]"
    assert tidy_answer(answer, [MEMO]) == answer
