"""Answers that are grounded but do not fit the question: the wrong look-alike's figures, the wrong
kind of answer, an answer about something else. Pure checks, then the answer loop with fakes."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.messages import HumanMessage

from keel.checks.answer_fit import (
    figures_from_other_entities,
    fit_reasons,
    quoted_about_asked,
    sentence_fits,
)
from keel.checks.answer_topic import names_off_question
from keel.checks.answer_types import expected_answer_type
from keel.checks.question_coverage import context_vocabulary, question_coverage
from keel.checks.statements import entity_codes, statements
from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.core.text import split_statements
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc

CATALOGUE = """## ZR-200 desktop arm
The ZR-200 is a compact desktop robot arm. It lifts up to 25 kilograms.
It runs for 10 hours on one charge and costs 12,500 euros.

## ZR-500 industrial arm
The ZR-500 is built for factories. Payload: up to 1,200 kilograms.
- Battery: runs for 6 hours
- Price: 95,000 euros"""
REPORT = "The Zentrix Robotics Annual Report 2023 is a product catalogue. Dana Whitfield is the chief executive."
POLICIES = ("The Alder clinic opens at 7 am on weekdays. The summer sale starts on 1 June. "
            "You can return it within 30 days.")
CFG = Configuration()


@pytest.mark.parametrize("question, answer, reason", [
    ("How much weight can the ZR-200 lift?", "It lifts up to 1,200 kilograms.", "wrong_entity:1200"),
    ("How much does the ZR-200 cost?", "It runs for 6 hours and costs 95,000 euros.", "wrong_entity:6,95000"),
    ("How much does the ZR-200 cost?", "The ZR-500 costs 95,000 euros.", "wrong_entity:entity:zr500,95000"),
    ("Who is the chief executive?", "The Zentrix Robotics Annual Report 2023 is a product catalogue.",
     "does_not_address_question"),
    ("How long is the warranty?", "2023.", "answer_type_mismatch:duration|length"),
    ("How many hours does the ZR-200 run?", "The ZR-200 is a compact desktop robot arm.", "answer_type_mismatch:count"),
    ("When does the Alder clinic open?", "The Alder clinic is open on weekdays.", "answer_type_mismatch:clock"),
    ("How many days do I have to return it?", "Within 48 hours of delivery.", "answer_type_mismatch:count_in_days"),
    ("Who chairs Zentrix Robotics' board?", "The Zentrix Robotics Annual Report 2023 is a product catalogue.",
     "does_not_address_question"),
])
def test_grounded_answers_that_do_not_fit_the_question_are_named(question, answer, reason):
    assert reason in fit_reasons(answer, question, [CATALOGUE, REPORT], CFG)


@pytest.mark.parametrize("question, answer", [
    ("How much weight can the ZR-200 lift?", "The ZR-200 lifts up to 25 kilograms [Source 1]."),
    ("How much does the ZR-200 cost?", "It costs 12,500 euros."),
    ("How much does the ZR-500 cost?", "95,000 euros [Source 1]."),
    ("Who is the chief executive?", "Dana Whitfield is the chief executive."),
    ("Who is the chief executive?", "Dana Whitfield."),
    ("When does the Alder clinic open?", "It opens at 7 am on weekdays."),
    ("When does the summer sale start?", "The sale starts on 1 June."),
    ("How many days do I have to return it?", "You can return it within 30 days."),
    ("How long does the ZR-200 run on one charge?", "It runs for 10 hours on one charge."),
    ("Compare the ZR-200 and the ZR-500 payloads.", "25 kilograms and 1,200 kilograms."),
])
def test_answers_that_fit_pass(question, answer):
    assert fit_reasons(answer, question, [CATALOGUE, REPORT, POLICIES], CFG) == []


def test_a_statement_is_about_the_entity_it_names_or_the_one_above_it():
    about = {s.text: s.entities for s in statements([CATALOGUE])}
    assert about["It lifts up to 25 kilograms."] == {"zr200"}
    assert about["- Price: 95,000 euros"] == {"zr500"}
    assert entity_codes("the ZR 200, zr-200 and ZR200 in 2023, the 10th and 5kg") == {"zr200"}


def test_a_figure_stated_for_both_entities_is_not_taken_for_a_look_alike():
    table = "| Spec | ZR-200 | ZR-500 |\n| Weight | 25 kg | 40 kg |"
    assert figures_from_other_entities("It weighs 40 kg.", "What does the ZR-200 weigh?", [table]) == []


SPEC_ROW = "Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg"


def test_a_table_row_comparing_entities_states_each_value_about_its_own_column():
    """The row names both models, but each value belongs to one: the V25's weight given for the
    V20 is a look-alike's figure, the V20's own is not."""
    question = "How much does the Vela V20 weigh?"
    assert figures_from_other_entities("The Vela V20 weighs 3.9 kg.", question, [SPEC_ROW]) == ["3.9"]
    assert figures_from_other_entities("The Vela V20 weighs 3.4 kg.", question, [SPEC_ROW]) == []
    assert [s.entities for s in statements([SPEC_ROW])] == [{"v20"}, {"v25"}]
    # a row of one entity's values, or an ordinary line with a colon, stays one statement
    assert len(statements(["Name: Ada Lovelace | Team: Billing | Phone: 4021"])) == 1


def test_the_extractive_quote_of_a_comparison_row_is_the_asked_entitys_value():
    assert quoted_about_asked(SPEC_ROW, "How much does the Vela V20 weigh?") == "Specification: Weight | Vela V20: 3.4 kg"
    assert quoted_about_asked(SPEC_ROW, "How much do the vacuums weigh?") == SPEC_ROW
    assert quoted_about_asked("The V20 weighs 3.4 kg.", "How much does the V20 weigh?") == "The V20 weighs 3.4 kg."


def test_banking_days_are_a_duration():
    from keel.checks.answer_types import counts_in, has_answer_of_type, unit_asked

    assert has_answer_of_type("Card refunds can take a further 5 banking days to appear.", ("duration",))
    assert counts_in(unit_asked("How many banking days does a card refund take?"), "5 banking days")


def test_question_types():
    assert expected_answer_type("How long is the return window?") == ("duration", "length")
    assert expected_answer_type("How long does the V20 run in Max mode?") == ("duration",)  # not "0.5 m"
    assert expected_answer_type("How much does shipping cost?") == ("money",)
    assert expected_answer_type("When must I register the vacuum?") == ("time", "duration")
    assert expected_answer_type("When does support open?") == ("clock",)
    assert expected_answer_type("Why is the light blinking?") == ()


def test_the_extractive_sentence_must_be_of_the_asked_type_and_entity():
    context = statements([CATALOGUE])
    question = "How much does the ZR-200 cost?"
    assert sentence_fits("It runs for 10 hours on one charge and costs 12,500 euros.", question, context)
    assert not sentence_fits("- Price: 95,000 euros", question, context)
    assert not sentence_fits("The ZR-200 is a compact desktop robot arm.", question, context)


SECTIONS = [
    "## ZR-200 desktop arm\nThe ZR-200 is a compact desktop robot arm. It can lift up to 25 kilograms.",
    "## ZR-500 industrial arm\nThe ZR-500 is built for factories. It can lift up to 1,200 kilograms.",
]
MISFIT = "<answer>It can lift up to 1,200 kilograms [Source 2].</answer>"


def _graph(model):
    docs = [passage_doc(text, page=n, doc_id="doc-1", source="catalogue.md") for n, text in enumerate(SECTIONS, 1)]
    return build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                       tokenizer=WordTokenizer())


def _ask(graph, question: str, **settings) -> dict:
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": settings})


def test_a_look_alikes_figure_is_retried_with_the_mismatch_named_then_never_a_wrong_success():
    model = ScriptedChatModel(responses=[MISFIT] * 2)
    # output moderation is not under test here (its classifier reads this lifting answer as violence)
    result = _ask(_graph(model), "How much weight can the ZR-200 lift?", moderate_answers=False)
    retry_rules = model.calls[1]["messages"][0].content
    assert "facts about something else (1200)" in retry_rules and "ZR-200" in retry_rules
    # both model answers refused; the extractive attempt quotes the ZR-200's own line
    assert result["status"] == "success" and "25 kilograms" in result["answer"] and "1,200" not in result["answer"]
    assert result["attempts"] == 3


def test_a_fitting_answer_after_a_misfit_is_accepted():
    model = ScriptedChatModel(responses=[MISFIT, "<answer>The ZR-200 can lift up to 25 kilograms [Source 1].</answer>"])
    result = _ask(_graph(model), "How much weight can the ZR-200 lift?")
    assert result["status"] == "success" and "25 kilograms" in result["answer"] and result["attempts"] == 2


def test_the_extractive_attempt_quotes_the_asked_entitys_statement_or_says_it_does_not_know():
    result = _ask(_graph(ScriptedChatModel(responses=[MISFIT] * 3)), "How much weight can the ZR-200 lift?")
    assert result["attempts"] == 3
    assert "1,200" not in result["answer"]
    if result["status"] == "success":
        assert "25 kilograms" in result["answer"]


SPECS = """## Vela V20 specs
| Runtime (Max mode) | 70 min |
| Warranty | 18 months |

Register your product in the app within 60 days of purchase. Report damage within 7 days."""


@pytest.mark.parametrize("answer, unbound", [
    ("The Vela V20 runs for 18 months in Max mode.", ["18"]),
    ("You can register your product within 7 days of purchase.", ["7"]),
    ("The Vela V20 runs for about 70 min in Max mode.", []),
    ("Register it within 60 days of purchase.", []),
    ("The warranty is 18 months.", []),
])
def test_a_figure_must_come_from_a_statement_that_says_what_the_answer_says_of_it(answer, unbound):
    from keel.checks.answer_fit import unbound_figures

    assert unbound_figures(answer, [SPECS]) == unbound


def test_the_extractive_attempt_on_a_spec_table_answers_with_the_asked_models_value():
    table = f"## Specifications\n{SPEC_ROW}\nSpecification: Price | Vela V20: €299 | Vela V25: €449"
    docs = [passage_doc(table, page=1, doc_id="doc-2", source="vela.md")]
    graph = build_graph(chat_model=ScriptedChatModel(responses=["<answer>It weighs 3.9 kg [Source 1].</answer>"] * 2),
                        embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs), tokenizer=WordTokenizer())
    # Worded with the row's own "weight": the keyword embeddings cannot tell "weigh" is about it, and
    # the answer-focus check (rightly) refuses a quote less relevant than another row of the table.
    result = _ask(graph, "What is the weight of the Vela V20?")
    assert result["attempts"] == 3 and result["status"] == "success", result
    assert "3.4 kg" in result["answer"] and "3.9" not in result["answer"]


def test_a_sentence_wrapped_over_two_lines_is_one_statement_about_both_its_entities():
    """Hard-wrapped Markdown: the V20's 70 minutes sit on the line that names the V25, but the
    sentence says them of the V20; read line by line the right answer would be refused."""
    guide = "## Runtime\nIn Max mode the V20 runs for about\n70 minutes and the V25 for about 95 minutes."
    question = "How long does the V20 run in Max mode?"
    assert fit_reasons("The V20 runs for about 70 minutes in Max mode.", question, [guide], CFG) == []
    assert [s.entities for s in statements([guide])][-1] == {"v20", "v25"}


def test_a_bold_heading_line_names_the_entity_of_the_paragraphs_below_it():
    guide = "**Vela V25**\nIt weighs 3.9 kg.\n\nIt runs 95 minutes."
    assert figures_from_other_entities("It runs 95 minutes.", "How long does the V20 run?", [guide]) == ["95"]


def test_the_extractive_attempt_never_quotes_a_row_whose_asked_cell_holds_no_answer():
    from keel.checks.answer_checks import best_supported_sentences

    row = "Specification: Weight | Vela V20: not listed | Vela V25: 3.9 kg"
    question = "How much does the Vela V20 weigh?"
    context = statements([row])
    chosen = best_supported_sentences(question, [(1, row)], 1, None, lambda s: sentence_fits(s, question, context),
                                      lambda s: quoted_about_asked(s, question))
    assert chosen == []


GUIDE = """# Vela guide
## Specifications
Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg
Specification: Suction power | Vela V20: 2,500 Pa | Vela V25: 4,000 Pa
In Max mode the V25 runs for 95 minutes.

## What's in the box
**Vela V25:** the robot, the Auto-Empty Dock with two dust bags and a mop pad.

## Manufacturer warranty
The warranty period is 2 years."""


@pytest.mark.parametrize("question, sentence, fits", [
    # the asked entity's row of the asked type, but about something else the context also names
    ("How much does the Vela V25's Auto-Empty Dock weigh?", "Specification: Weight | Vela V25: 3.9 kg", False),
    ("What is the suction power of the Vela V25 in Max mode?", "Specification: Suction power | Vela V25: 4,000 Pa", False),
    ("How much does the Vela V25 weigh?", "Specification: Weight | Vela V25: 3.9 kg", True),
    ("What is the suction power of the Vela V25?", "Specification: Suction power | Vela V25: 4,000 Pa", True),
    # prose says its subject in too many ways to count words: it is held to it only when a model is named
    ("What is the suction power in Max mode?", "The vacuum has a suction power of 4,000 Pa.", True),
    ("What is the suction power of the Vela V25 in Max mode?", "The V25 has a suction power of 4,000 Pa.", False),
    # a word the context never uses is the evidence checks' business, not a reason to skip this row
    ("What is the suction power of the Vela V25 on carpets?", "Specification: Suction power | Vela V25: 4,000 Pa", True),
    # the heading above a sentence says what it is about
    ("How long is the manufacturer warranty?", "The warranty period is 2 years.", True),
    # "how many litres" wants litres
    ("How many litres does a Vela V25 dust bag hold?", "**Vela V25:** the robot, the Auto-Empty Dock with two dust bags and a mop pad.", False),
])
def test_an_extractive_sentence_must_say_what_the_question_is_about(question, sentence, fits):
    from keel.checks.question_coverage import context_vocabulary

    context = statements([GUIDE])
    assert sentence_fits(sentence, question, context, context_vocabulary(context), CFG.min_question_coverage) is fits


def test_a_statement_knows_the_headings_above_it():
    about = {s.text: s.headings for s in statements([GUIDE])}
    assert about["The warranty period is 2 years."] == "# Vela guide ## Manufacturer warranty"


@pytest.mark.parametrize("answer, wrong", [
    ("The V20 runs for about 95 minutes in Max mode.", ["95"]),  # the V25's figure, same sentence
    ("The V20 runs for about 70 minutes in Max mode.", []),
    ("The V20 weighs 3 kg.", []),  # "both weigh 3 kg": the figure is both models'
])
def test_in_a_sentence_naming_two_models_each_figure_belongs_to_the_one_named_before_it(answer, wrong):
    guide = ("## Vacuums\nIn Max mode the V20 runs for about\n70 minutes and the V25 for about 95 minutes.\n"
             "The V20 and V25 both weigh 3 kg.")
    assert figures_from_other_entities(answer, "How long does the V20 run in Max mode?", [guide]) == wrong


def test_a_sentence_that_tells_each_models_figure_as_its_own_can_answer_for_either():
    """"the V20 runs for 70 minutes and the V25 for 95" answers the V20 question: the quote gives the
    V20's figure and tells the V25's as the V25's. Swapped, or without the asked model's figure, it does not."""
    guide = "In Max mode the V20 runs for about\n70 minutes and the V25 for about 95 minutes."
    context = statements([guide])
    question = "How long does the V20 run in Max mode?"
    assert sentence_fits(guide.replace("\n", " "), question, context)
    assert sentence_fits(guide.replace("\n", " "), "How long does the V25 run in Max mode?", context)
    assert figures_from_other_entities(guide.replace("\n", " "), question, [guide]) == []
    swapped = "In Max mode the V20 runs for about 95 minutes and the V25 for about 70 minutes."
    assert figures_from_other_entities(swapped, question, [guide]) == ["95"]
    assert figures_from_other_entities("The V20 runs for about 95 minutes.", question, [guide]) == ["95"]


def test_a_sentence_is_ranked_as_read_under_its_headings():
    from keel.checks.statements import under_headings

    assert under_headings(statements([GUIDE]))["The warranty period is 2 years."] == (
        "Vela guide Manufacturer warranty The warranty period is 2 years.")


def test_the_extractive_attempt_takes_a_count_in_the_asked_unit_as_the_answer_check_does():
    assert sentence_fits("Delivery takes 3-5 business days.", "How many business days does delivery take?")
    assert sentence_fits("Delivery takes 3 to 5 working days.", "How many days does delivery take?")
    assert not sentence_fits("Delivery takes about a week.", "How many days does delivery take?")


POLICY = """## Shipping
Orders ship within 2 business days.

## Refunds
We refund your money within 14 days after your return arrives at our warehouse.

## Extend your warranty by registering
Register your product in the app within 60 days of purchase and we add 12 months to the warranty.

## Price protection
If we lower the price within 7 days after you bought it, we refund the difference."""


@pytest.mark.parametrize("question, answer, off", [
    ("How long does it take to get my refund after my return arrives at the warehouse?",
     "You get your refund within 2 business days [Source 1].", ["2"]),
    ("Within how many days of purchase must I register my product in the app to extend the warranty?",
     "You can register your product in the app within 7 days of purchase [Source 1].", ["7"]),
    ("How long does it take to get my refund after my return arrives at the warehouse?",
     "The refund is paid within 14 days after the return arrives [Source 1].", []),
    # one figure on the question is enough: a right answer may add a neighbouring line's
    ("Within how many days of purchase must I register my product in the app to extend the warranty?",
     "Register within 60 days of purchase; the warranty grows by 12 months. Orders ship in 2 business days.", []),
])
def test_an_answers_figure_must_come_from_a_statement_about_what_was_asked(question, answer, off):
    from keel.checks.answer_fit import figures_off_question

    assert figures_off_question(answer, question, [POLICY], CFG.min_question_coverage) == off
    reasons = fit_reasons(answer, question, [POLICY], CFG)
    assert any(r.startswith("figure_about_something_else") for r in reasons) == bool(off)


def test_a_figure_off_the_question_is_not_judged_where_the_answer_is_a_name_or_untyped():
    """"Who" and untyped questions are answered in words; a year beside a name is a side remark."""
    question = "Who leads the refunds team?"
    assert not any(r.startswith("figure_about_something_else")
                   for r in fit_reasons("Anna Berg, since 2 business days [Source 1].", question, [POLICY], CFG))


def test_a_hyphenated_code_is_the_entity_not_a_subject_word_of_the_question():
    context = statements(SECTIONS)
    vocabulary = context_vocabulary(context)
    lift = next(s for s in context if "25 kilograms" in s.text)
    assert question_coverage(lift.text, "How much weight can the ZR-200 lift?", "", vocabulary) == 1.0


def test_evidence_for_a_question_naming_a_code_is_the_statement_naming_it():
    """An embedding reads "What does error code E8 mean?" as close to any line about errors; the
    row naming E8 comes first, so the evidence check does not refuse a question the table answers."""
    from keel.checks.answer_checks import ranked_context_sentences

    table = ("## Error codes\nWhen an error occurs the vacuum stops and its light ring flashes red.\n"
             "Code: E4 | Meaning: Wheel stuck\nCode: E8 | Meaning: LiDAR sensor blocked")
    question = "What does error code E8 mean?"
    def closer_to_the_error_line(q: str, sentences: list[str]) -> list[float]:  # as MiniLM ranks them
        return [0.9 if "error occurs" in s else 0.5 for s in sentences]

    ranked = ranked_context_sentences(question, [(1, table)], closer_to_the_error_line, split_statements)
    assert [s for _, s in ranked][:2] == ["Code: E8 | Meaning: LiDAR sensor blocked",
                                          "When an error occurs the vacuum stops and its light ring flashes red."]


def test_the_answers_focus_is_judged_among_the_tables_rows_not_the_table_as_one_run_on_sentence():
    from keel.checks.grounding import answer_focus
    from keel.checks.semantic import semantic_for

    guide = ("## Specifications\nThe table lists both models.\n"
             "Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg\n"
             "Specification: Charging time | Vela V20: about 4 hours | Vela V25: about 5 hours\n"
             "Specification: Noise | Vela V20: 62 dB | Vela V25: 65 dB\n"
             "Specification: Runtime | Vela V20: up to 110 minutes | Vela V25: up to 150 minutes")
    similarities = semantic_for(KeywordEmbeddings())
    question = "What is the charging time of the Vela V25?"
    on_row = answer_focus("Specification: Charging time | Vela V25: about 5 hours [Source 1]", [guide], question,
                          similarities)
    off_row = answer_focus("Specification: Noise | Vela V25: 65 dB [Source 1]", [guide], question, similarities)
    assert on_row >= CFG.answer_focus_ratio > off_row


@pytest.mark.parametrize("sentence, owners", [
    ("In Max mode the V20 runs for about 70 minutes and the V25 for about 95 minutes.",
     {"70": {"v20"}, "95": {"v25"}}),
    # figure first: each figure is the models named after it
    ("The warranty is 2 years for the Vela V20 and the Nimbus AX3000, 3 years for the Vela V25 and the Nimbus AX5400.",
     {"2": {"v20", "ax3000"}, "3": {"v25", "ax5400"}}),
    ("The V20 and V25 both weigh 3 kg.", {"3": {"v20", "v25"}}),
    # a year before the first model is the whole sentence's; the runtimes are each model's own
    ("In 2023 the V20 ran 70 minutes and the V25 95 minutes.", {"2023": {"v20", "v25"}, "70": {"v20"}, "95": {"v25"}}),
])
def test_a_sentence_naming_several_models_says_whose_each_figure_is(sentence, owners):
    (statement,) = statements([sentence])
    assert {figure: set(statement.owners_of(figure)) for figure in statement.numbers} == owners


def test_a_figure_with_a_unit_is_read_in_that_unit_when_judging_whose_it_is():
    """"2 years" for the AX5400 is the AX3000's warranty, though "wait 2 minutes" (about no model)
    also holds a 2."""
    guide = ("## Warranty\nThe warranty is 2 years for the Nimbus AX3000, 3 years for the Nimbus AX5400.\n\n"
             "## Restarting\nUnplug the router and wait 2 minutes.")
    question = "How long is the warranty on the Nimbus AX5400?"
    assert figures_from_other_entities("The warranty on the AX5400 is 2 years.", question, [guide]) == ["2"]
    assert figures_from_other_entities("The warranty on the AX5400 is 3 years.", question, [guide]) == []


def test_the_extractive_attempt_quotes_no_row_while_another_statement_says_more_of_the_question():
    """The standard-mode runtime row is not the answer to "in Max mode" while a sentence gives the
    V20's Max-mode runtime (here beside the V25's, so it cannot be quoted whole either)."""
    from keel.checks.answer_fit import best_question_coverage

    guide = ("## Specifications\nSpecification: Runtime (standard mode) | Vela V20: up to 110 minutes | "
             "Vela V25: up to 150 minutes\n\n## Runtime\nIn Max mode the V20 will run for about 70 minutes and the V25 "
             "for about 95 minutes.")
    context, question = statements([guide]), "How long does the Vela V20 run in Max mode?"
    vocabulary = context_vocabulary(context)
    row = "Specification: Runtime (standard mode) | Vela V20: up to 110 minutes"
    assert sentence_fits(row, question, context, vocabulary, CFG.min_question_coverage)
    enough = max(CFG.min_question_coverage, best_question_coverage(question, context, vocabulary))
    assert not sentence_fits(row, question, context, vocabulary, enough)
    assert sentence_fits(row, "How long does the Vela V20 run in standard mode?", context, vocabulary,
                         max(CFG.min_question_coverage, best_question_coverage(
                             "How long does the Vela V20 run in standard mode?", context, vocabulary)))


def test_the_extractive_attempt_never_quotes_a_heading():
    from keel.checks.answer_checks import best_supported_sentences

    page = "## Press and partnerships\nJournalists can write to our press office at press@example.com."
    quoted = best_supported_sentences("Who runs the press office?", [(1, page)], 2,
                                      lambda q, sentences: [1.0 if s.startswith("##") else 0.5 for s in sentences])
    assert quoted == ["Journalists can write to our press office at press@example.com. [Source 1]"]


def test_the_extractive_attempt_never_quotes_a_sentence_that_announces_what_follows():
    from keel.checks.answer_checks import best_supported_sentences

    page = ("A typical complexity class has a definition like the following: "
            "An example of a decision problem is the following. "
            "The set of decision problems solvable in polynomial time is called P.")
    quoted = best_supported_sentences("What is a complexity class defined by?", [(1, page)], 1,
                                      lambda q, sentences: [1.0 if "following" in s else 0.5 for s in sentences])
    assert quoted == ["The set of decision problems solvable in polynomial time is called P. [Source 1]"]


def test_each_cited_quote_of_an_answer_is_judged_on_its_own_for_focus():
    """The extractive answer joins its quotes with no full stop between them: read as one sentence,
    the longer second quote would stand for both and the right first one would look off focus."""
    from keel.checks.grounding import answer_focus
    from keel.checks.semantic import semantic_for

    page = ("Specification: Price | Nimbus AX3000: €129 | Nimbus AX5400: €199\n"
            "Basic schedules on the AX3000 are free and let you pause the internet for a device or a group of devices.")
    answer = ("Specification: Price | Nimbus AX3000: €129 [Source 1] Basic schedules on the AX3000 are free and let "
              "you pause the internet for a device or a group of devices. [Source 1]")
    question = "What is the price of the Nimbus AX3000?"
    assert answer_focus(answer, [page], question, semantic_for(KeywordEmbeddings())) == 1.0


ERRORS_AND_LIGHTS = """## Error codes
Code: E4 | Meaning: Wheel stuck | What to do: Remove hair from the wheels
Code: E8 | Meaning: LiDAR sensor blocked | What to do: Remove anything lying on the sensor

## Router lights
Light: Solid red | Meaning: No internet connection
Light: Pulsing blue | Meaning: Ready for set-up"""


@pytest.mark.parametrize("answer, wrong", [
    ("The error code E8 is a light solid red.", ["light", "red", "solid"]),
    ("E8 means the LiDAR sensor is blocked.", []),
    ("Error code E8 means the sensor is covered by something lying on it.", []),  # half its words are the E8 row's
    # one word of the E8 row is not enough when the rest is the router-light row's
    ("Error code E8 means the sensor light is solid red: no internet connection.",
     ["connection", "internet", "light", "red", "solid"]),
])
def test_words_said_of_the_asked_code_must_come_from_a_statement_about_it(answer, wrong):
    from keel.checks.answer_fit import words_from_other_entities

    question = "What does error code E8 mean on a Vela vacuum?"
    assert words_from_other_entities(answer, question, [ERRORS_AND_LIGHTS]) == wrong
    assert any(r.startswith("wrong_entity") for r in fit_reasons(answer, question, [ERRORS_AND_LIGHTS], CFG)) == bool(wrong)


def test_a_range_is_not_on_the_question_because_its_upper_figure_starts_another_range():
    """"3-5 business days" is standard delivery; the 5 of "5-8 business days" to Switzerland is not
    a 5 business days."""
    shipping = ("## Delivery times\n- Standard delivery: 3-5 business days.\n"
                "- Delivery to Norway and Switzerland: 5-8 business days, because parcels go through customs.")
    question = "How long does delivery to Switzerland take?"
    assert any(r.startswith("figure_about_something_else")
               for r in fit_reasons("3-5 business days.", question, [shipping], CFG))
    assert fit_reasons("Delivery to Switzerland takes 5-8 business days.", question, [shipping], CFG) == []


def test_a_row_under_the_asked_models_heading_is_about_it_when_ranking():
    """The rows under "## Vela V20" never write "V20", yet they are the V20's; a prose line that
    names the V20 does not push the row the embedding prefers out of the quote."""
    from keel.checks.answer_checks import best_supported_sentences

    page = ("## Vela V20\n\n- Max mode runtime: 25 minutes\n- Eco mode runtime: 90 minutes\n\n"
            "The V20 runs up to 90 minutes in Eco mode, and Max mode is for carpets.")
    closest_to_the_row = lambda q, sentences: [0.9 if "Max mode runtime" in s else 0.5 for s in sentences]  # noqa: E731
    assert best_supported_sentences("How long does the V20 run in Max mode?", [(1, page)], 1,
                                    closest_to_the_row) == ["- Max mode runtime: 25 minutes [Source 1]"]


STAFF = """## Our support team
Our support team of 30 agents answers in four languages. The team is led by Ada Moreau, Head of Support.

## Press
Journalists can write to press@alder.example.

## Billing
Invoices are checked every Monday.
Questions about them go to Tom Reyes."""


@pytest.mark.parametrize("question, answer", [
    ("Who runs the press office?", "The press office is run by Ada Moreau [Source 1]."),
    ("Who is the chief financial officer?", "Ada Moreau is the chief financial officer."),
    # a quote beside it about the press names no one: "Journalists" opens a sentence, it is no name
    ("Who runs the press office?", "The team is led by Ada Moreau, Head of Support. [Source 1] "
                                   "Journalists can write to press@alder.example. [Source 1]"),
])
def test_a_who_answer_naming_someone_from_a_statement_about_something_else_is_refused(question, answer):
    refused = [r for r in fit_reasons(answer, question, [STAFF], CFG) if r.startswith("name_about_something_else:")]
    assert refused and {"Ada", "Moreau"} <= set(refused[0].split(":")[1].split(","))


@pytest.mark.parametrize("question, answer", [
    ("Who leads the support team?", "Ada Moreau leads the support team [Source 1]."),
    ("Who is the head of support?", "Ada Moreau."),
    # the statement beside the name, or the heading above it, says what the question is about
    ("Who answers questions about invoices?", "Tom Reyes [Source 1]."),
    ("Who handles billing questions?", "Tom Reyes."),
])
def test_a_who_answer_from_a_statement_about_the_question_passes(question, answer):
    assert not [r for r in fit_reasons(answer, question, [STAFF], CFG) if r.startswith("name_about")]


def test_an_officer_does_not_run_an_office():
    page = "## Team\nAda Moreau is our Chief Executive Officer.\n\n## Press\nJournalists write to press@alder.example."
    assert names_off_question("Ada Moreau [Source 1].", "Who runs the press office?", [page], 0.5) == ["Ada", "Moreau"]


def test_a_name_the_question_gives_is_what_it_is_about_unless_every_line_says_it():
    chronicle = ("Emma was the sister of Duke Richard of Normandy. Emma married King Ethelred in 1002. "
                 "The duchy grew under Richard's rule. Its churches were rebuilt in stone.")
    assert names_off_question("Duke Richard.", "Who was Emma's brother?", [chronicle], 0.5) == []
    assert names_off_question("Duke Richard.", "Who was Emma's brother?", [chronicle], 0.1) == ["Duke", "Richard"]


def test_the_name_check_can_be_switched_off():
    cfg = Configuration(require_names_about_question=False)
    assert not [r for r in fit_reasons("Ada Moreau runs it.", "Who runs the press office?", [STAFF], cfg)
                if r.startswith("name_about")]


PARCEL_POLICY = """## Damaged parcels
Tell us within 48 hours if a parcel arrives damaged. We send a replacement at no cost.

## Repairs
Repairs after the warranty are quoted by the service centre.

## Delivery
Standard delivery is free for orders over EUR 50."""


def test_an_amount_written_in_words_must_come_from_a_statement_about_the_question():
    reasons = fit_reasons("We send a replacement at no cost [Source 1].",
                          "How much does a repair after the warranty cost?", [PARCEL_POLICY], CFG)
    assert "figure_about_something_else:no cost" in reasons
    assert fit_reasons("Standard delivery is free for orders over EUR 50 [Source 1].",
                       "How much does standard delivery cost?", [PARCEL_POLICY], CFG) == []


def test_a_figure_is_refused_where_another_line_of_the_asked_type_about_the_asked_model_says_more():
    guide = ("## Nimbus router\nPress and hold the Reset button for 8 seconds to factory reset the router.\n"
             "The router restarts with factory settings, which takes about 3 minutes.")
    question = "How long do I hold the Reset button to factory reset a Nimbus router?"
    assert "figure_about_something_else:3" in fit_reasons("3 minutes.", question, [guide], CFG)
    assert fit_reasons("Hold the Reset button for 8 seconds [Source 1].", question, [guide], CFG) == []
    # a look-alike's line saying more of the question is not the one that answers about the asked model
    vacuums = ("## Vela V20\nIn eco mode the V20 battery lasts 70 minutes.\n\n"
               "## Vela V25\nOn a full charge in eco mode the V25 battery runs for 3 hours.")
    assert fit_reasons("The V20 battery lasts 70 minutes in eco mode [Source 1].",
                       "How long does the V20 battery last in eco mode on a full charge?", [vacuums], CFG) == []


def test_free_before_another_thing_does_not_say_what_the_asked_thing_costs():
    page = ("## Making a warranty claim\nIf the product must be repaired, we email a free shipping label.\n\n"
            "## Delivery\nWe offer free standard delivery.")
    assert "figure_about_something_else:free" in fit_reasons(
        "If it must be repaired, we email a free shipping label.", "How much does a repair outside the warranty cost?",
        [page], CFG)
    assert fit_reasons("We offer free standard delivery.", "How much does delivery cost?", [page], CFG) == []


def test_free_is_a_word_not_part_of_hands_free():
    page = "## Headsets\nThe hands-free kit costs EUR 30.\n\n## Repairs\nRepairs are quoted by the service centre."
    assert fit_reasons("Repairs are free.", "How much does a repair cost?", [page], CFG) == []


def test_names_in_a_list_and_a_curly_apostrophe_are_read_as_a_reader_reads_them():
    refused = names_off_question("- Journalists can write to press@alder.example [Source 1]. "
                                 "The team is led by Ada Moreau [Source 1].", "Who runs the press office?", [STAFF], 0.5)
    assert refused == ["Ada", "Moreau"]  # "Journalists" opens a list item: a word, not a name on the question
    staff = "## Team\nOur team\u2019s lead is Ada Moreau.\n\n## Press\nJournalists write to press@alder.example."
    assert names_off_question("Ada Moreau.", "Who is Alder\u2019s press officer?", [staff], 0.5) == ["Ada", "Moreau"]


def test_a_name_the_question_gives_counts_however_it_stems():
    chronicle = ("Thomas studied under Daniel Okafor in Oslo. The school opened in 1990. "
                 "Its library holds 4,000 books. Thomas later taught there.")
    assert names_off_question("Daniel Okafor.", "Who was Thomas's mentor?", [chronicle], 0.5) == []


TROUBLESHOOTING = """# Troubleshooting
When a Vela vacuum shows an error code, it stops and its light ring flashes red.

## Vela error codes
Code: E4 | Meaning: Cliff sensor error | What to do: Wipe the cliff sensors
Code: E7 | Meaning: Dustbin not detected | What to do: Push the dustbin in"""


def test_focus_on_a_named_code_is_measured_against_the_statements_about_it():
    """The introduction reads closer to "What does error code E4 mean on a Vela vacuum?" than the
    E4 row does, but only the row says what E4 means: quoting it is on focus, quoting the E7 row is not."""
    from keel.checks.grounding import answer_focus
    from keel.checks.semantic import semantic_for

    similarities = semantic_for(KeywordEmbeddings())
    question = "What does error code E4 mean on a Vela vacuum?"
    e4_row = "Code: E4 | Meaning: Cliff sensor error | What to do: Wipe the cliff sensors [Source 1]"
    e7_row = "Code: E7 | Meaning: Dustbin not detected | What to do: Push the dustbin in [Source 1]"
    assert answer_focus(e4_row, [TROUBLESHOOTING], question, similarities) == 1.0
    assert answer_focus(e7_row, [TROUBLESHOOTING], question, similarities) < CFG.answer_focus_ratio
    # a line about no code is measured against the best line of all, as before, and focus stays a share
    intro = "When a Vela vacuum shows an error code, it stops and its light ring flashes red. [Source 1]"
    assert answer_focus(intro, [TROUBLESHOOTING], question, similarities) <= 1.0


@pytest.mark.parametrize("text, is_money", [
    ("Express delivery costs EUR 9.90, whatever the order value.", True),  # the code before the amount
    ("Below EUR 50 it costs EUR 4.95.", True),
    ("It costs 9.90 euros.", True),
    ("Returns are free of charge.", True),
    ("The European Union sets the rules.", False),
    ("Delivery takes 2 business days.", False),
    # "free" is an amount only where it prices something
    ("Standard delivery is free for orders over EUR 50.", True),
    ("If it must be repaired, we email a free shipping label.", True),
    ("Place the dock with 0.5 m of free space on each side.", False),  # space, not a price
    ("Feel free to call us.", False),
    ("The sensor is free of dust.", False),
    ("It's free.", True),
    ("Delivery: Free", True),
    ("Use it hands-free for calls.", False),
    ("Pull gently to free the brush.", False),
])
def test_what_counts_as_an_amount_of_money(text, is_money):
    from keel.checks.answer_types import has_answer_of_type

    assert has_answer_of_type(text, ("money",)) is is_money


def test_a_code_of_one_product_line_is_not_explained_by_anothers_row():
    """The Vela's error table's E5 row says what E5 means on a Vela vacuum, not on a Nimbus router."""
    page = ("# Vela vacuums and Nimbus routers\nThe Vela V20 and the Nimbus AX3000 are our products.\n\n"
            "## Vela error codes\nCode: E5 | Meaning: Bumper stuck | What to do: Tap the bumper")
    context = statements([page])
    row = "Code: E5 | Meaning: Bumper stuck | What to do: Tap the bumper"
    assert sentence_fits(row, "What does error code E5 mean on a Vela vacuum?", context)
    assert not sentence_fits(row, "What does error code E5 mean on a Nimbus router?", context)


WARRANTY = ("## Manufacturer warranty\nThe warranty period is 2 years for the Vela V20 and 3 years for the Vela V25.\n\n"
            "## Our support team\nThe team is led by Daniel Okafor, Head of Customer Support.")


def test_an_answer_restating_a_question_word_the_documents_never_use_is_refused():
    refurbished = "What is the warranty period for refurbished products?"
    assert "question_word_not_in_documents:products,refurbished" in fit_reasons(
        "The warranty period for refurbished products is 2 years.", refurbished, [WARRANTY], CFG)
    # the same figure for the question the documents do answer; and the asker's own word left out of the answer
    assert fit_reasons("The warranty period for the Vela V20 is 2 years.",
                       "What is the warranty period for the Vela V20?", [WARRANTY], CFG) == []
    assert fit_reasons("It is visible for 22 miles [Source 1].", "How far is the lamp seen?",
                       ["The lamp is visible for 22 miles."], CFG) == []
    off = dataclasses.replace(CFG, refuse_unstated_question_words=False)
    assert not any(r.startswith("question_word_not_in_documents") for r in fit_reasons(
        "The warranty period for refurbished products is 2 years.", refurbished, [WARRANTY], off))


def test_a_document_uses_a_word_plainly_or_not_at_all():
    from keel.checks.answer_topic import plainly_says

    assert plainly_says("updat", {"update"}) and plainly_says("sav", {"save"})
    assert not plainly_says("market", {"mark"})  # "marked" is not "marketing"
    assert not plainly_says("outside", {"out"})
    assert plainly_says("email", {"e-mail"}) and plainly_says("wi-fi", {"wifi"})


def test_a_name_for_one_role_does_not_answer_for_a_role_sharing_a_word():
    """The head of customer support is not the head of marketing: the line says "head" but not
    "marketing", so it says too little of the question; it does answer who heads customer support."""
    marketing = names_off_question("Daniel Okafor.", "Who is the head of marketing?", [WARRANTY], 0.5,
                                   CFG.min_question_coverage)
    assert marketing == ["Daniel", "Okafor"]
    assert names_off_question("Daniel Okafor.", "Who is the head of customer support?", [WARRANTY], 0.5,
                              CFG.min_question_coverage) == []
    # with no share asked, one shared word is enough, as before
    assert names_off_question("Daniel Okafor.", "Who is the head of marketing?", [WARRANTY], 0.5) == []


def test_a_question_word_the_context_never_uses_weighs_half_in_its_coverage():
    row = "Specification: Runtime | Vela V20: up to 110 minutes"
    question = "How long does a firmware update of the Vela V20 battery take?"
    vocabulary = {"specification", "runtime", "vela", "minut", "battery"}
    assert question_coverage(row, question, "", vocabulary) == 0.0  # "firmware update" left out: only "battery"
    assert question_coverage(row, question, "Battery", vocabulary) == 1.0
    # counted at half: the battery heading no longer says the whole question
    assert question_coverage(row, question, "Battery", vocabulary, CFG.unused_question_word_weight) == 0.5
    # a question in the asker's words throughout is held to no line: "shipping" of a page saying "delivery"
    assert question_coverage("Standard delivery: 2-3 business days", "How long does shipping take?", "",
                             {"standard", "delivery", "business"}, CFG.unused_question_word_weight) == 1.0
    assert fit_reasons("Standard delivery takes 2-3 business days.", "How long does shipping take?",
                       ["- Standard delivery: 2-3 business days"], CFG) == []
    seen = question_coverage("The lamp is visible for 22 miles.", "How far is the lamp seen?", "", {"lamp", "visibl"},
                             CFG.unused_question_word_weight)
    assert seen >= CFG.min_question_coverage  # the asker's own word for "visible" does not sink the line


def test_a_plain_text_title_in_capitals_is_a_heading_not_an_answer():
    from keel.checks.answer_checks import best_supported_sentences

    from keel.checks.statements import HEADING

    assert not any(HEADING.match(line) for line in ("FAQ", "USB-C", "YES", "N/A", "RETURNS WITHIN 30 DAYS"))
    faq = "DISCOUNT CODES\nOne discount code can be used per order. Codes are valid for 30 days."
    context = statements([faq])
    assert [s.headings for s in context if not s.text.isupper()] == ["DISCOUNT CODES"] * 2
    chosen = best_supported_sentences("How much discount does a discount code give?", [(1, faq)], 2, None)
    assert chosen and not any(c.startswith("DISCOUNT CODES") for c in chosen)


def test_a_retry_is_told_which_word_the_documents_never_say_and_whose_words_it_borrowed():
    from chains.answer_messages import mismatch_notes

    notes = mismatch_notes(["question_word_not_in_documents:refurbished", "claim_about_something_else:main,node",
                            "ungrounded"], "What is the warranty for refurbished products?", CFG).splitlines()
    assert len(notes) == 2  # one line per answer-fit mismatch; other reasons have their own notes elsewhere
    assert "'refurbished'" in notes[0] and CFG.fallback_answer in notes[0]
    assert "(main,node)" in notes[1] and CFG.fallback_answer in notes[1]


def test_the_extractive_attempt_does_not_quote_a_far_off_sentence_of_the_asked_type():
    """The line closest to the question holds no price; the only price is a spare brush's, far from
    the question: quoting it would answer what the warranty extension costs with the brush's price."""
    from keel.chains.extractive import extractive_answer
    from keel.components import Components

    question = "How much does the warranty extension cost?"
    passages = [(1, "The warranty extension is described in the app. Spare brushes cost €9.99.")]
    similarity = Components(embeddings=KeywordEmbeddings()).similarity(CFG)
    assert extractive_answer(question, passages, CFG, similarity) == CFG.fallback_answer
    anything = dataclasses.replace(CFG, min_quote_similarity=0.0, min_uncovered_quote_similarity=0.0)
    assert extractive_answer(question, passages, anything, similarity) == "Spare brushes cost €9.99. [Source 1]"
    passages = [(1, passages[0][1] + " The warranty extension cost is €29.")]
    assert "The warranty extension cost is €29. [Source 1]" in extractive_answer(question, passages, CFG, similarity)


def test_a_quote_saying_little_of_the_question_must_read_very_close_to_it():
    """The best sentence of the right page about something else: it reads fairly close to a question
    the page does not answer, and says almost none of its words. It is quoted only when it reads as
    close as a sentence that answers; one that says the question's words needs less."""
    from keel.chains.extractive import extractive_answer

    question = "Which problem in chemistry would a proof that P equals NP help to solve?"
    off_topic = "The P versus NP problem is one of the Millennium Prize Problems."
    covering = "A proof that P equals NP would help chemistry solve the protein folding problem."

    def reading(close: dict[str, float]):
        return lambda _question, texts: [close.get(text, 0.0) for text in texts]

    between = (CFG.min_quote_similarity + CFG.min_uncovered_quote_similarity) / 2
    assert extractive_answer(question, [(1, off_topic)], CFG, reading({off_topic: between})) == CFG.fallback_answer
    close = CFG.min_uncovered_quote_similarity + 0.01
    assert extractive_answer(question, [(1, off_topic)], CFG, reading({off_topic: close})) == f"{off_topic} [Source 1]"
    assert extractive_answer(question, [(1, covering)], CFG, reading({covering: between})) == f"{covering} [Source 1]"
    below_floor = CFG.min_quote_similarity - 0.01  # saying the question's words is not enough on its own
    assert extractive_answer(question, [(1, covering)], CFG, reading({covering: below_floor})) == CFG.fallback_answer


def test_a_quote_says_the_question_with_the_headings_above_it():
    """"The connection to the internet is down." says nothing of a solid red light on its own; under
    the heading "Solid red router light" it says the whole question, and needs only to read close."""
    from keel.chains.extractive import extractive_answer

    question = "What does a solid red light on the router mean?"
    line = "The connection to the internet is down."
    between = (CFG.min_quote_similarity + CFG.min_uncovered_quote_similarity) / 2

    def reading(_question, texts):
        return [between if text == line else 0.0 for text in texts]

    assert extractive_answer(question, [(1, f"## Solid red router light\n\n{line}")], CFG,
                             reading) == f"{line} [Source 1]"
    assert extractive_answer(question, [(1, f"Solid red router lights are rare. {line}")], CFG,
                             reading) == CFG.fallback_answer
