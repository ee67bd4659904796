"""Answers that are grounded but do not fit the question: the wrong look-alike's figures, the wrong
kind of answer, an answer about something else. Pure checks, then the answer loop with fakes."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from keel.checks.answer_fit import (
    entity_codes,
    expected_answer_type,
    figures_from_other_entities,
    fit_reasons,
    sentence_fits,
    statements,
)
from keel.graph import build_graph
from keel.core.configuration import Configuration
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
    assert fit_reasons(answer, question, [CATALOGUE, REPORT], CFG) == []


def test_a_statement_is_about_the_entity_it_names_or_the_one_above_it():
    about = {s.text: s.entities for s in statements([CATALOGUE])}
    assert about["It lifts up to 25 kilograms."] == {"zr200"}
    assert about["- Price: 95,000 euros"] == {"zr500"}
    assert entity_codes("the ZR 200, zr-200 and ZR200 in 2023, the 10th and 5kg") == {"zr200"}


def test_a_figure_stated_for_both_entities_is_not_taken_for_a_look_alike():
    table = "| Spec | ZR-200 | ZR-500 |\n| Weight | 25 kg | 40 kg |"
    assert figures_from_other_entities("It weighs 40 kg.", "What does the ZR-200 weigh?", [table]) == []


def test_question_types():
    assert expected_answer_type("How long is the return window?") == ("duration", "length")
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


def _ask(graph, question: str) -> dict:
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": {}})


def test_a_look_alikes_figure_is_retried_with_the_mismatch_named_then_never_a_wrong_success():
    model = ScriptedChatModel(responses=[MISFIT] * 2)
    result = _ask(_graph(model), "How much weight can the ZR-200 lift?")
    assert not (result["status"] == "success" and "1,200" in result["answer"])
    retry_rules = model.calls[1]["messages"][0].content
    assert "facts about something else (1200)" in retry_rules and "ZR-200" in retry_rules
    assert any(reason.startswith("wrong_entity") for reason in result["reasons"])


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
