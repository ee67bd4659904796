"""The answer-fit checks on real parts: the bundled help-desk pages ingested as `keel ingest` does,
searched in real Redis Stack with the real embeddings, the checks run on what comes back."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from keel.checks.answer_fit import fit_reasons
from keel.checks.answerability import evidence_gaps
from keel.checks.grounding import answer_focus
from keel.checks.semantic import semantic_for
from keel.loaders.pipeline import ingest
from keel.retrievers.parent_document import KeelParentRetriever

PAGES = Path(__file__).resolve().parents[2] / "keel" / "evals" / "helpdesk" / "docs"

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def store(make_module_store):
    return make_module_store()


@pytest.fixture(scope="module")
def search(store):
    user = f"fit-{uuid.uuid4().hex[:6]}"
    pages = [PAGES / "returns-refunds-warranty.md", PAGES / "vela-robot-vacuums.md", PAGES / "troubleshooting.md",
             PAGES / "shipping-and-orders.txt"]
    assert ingest(pages, store, store.cfg, user_id=user).errors == []
    retriever = KeelParentRetriever(store=store, user_id=user)
    return lambda question: [doc.page_content for doc in retriever.invoke(question)]


def test_a_figure_from_the_price_protection_line_is_not_the_registration_window(search, store):
    question = "Within how many days of purchase must I register my product in the app to extend the warranty?"
    passages = search(question)
    wrong = fit_reasons("You can register your product in the app within 7 days of purchase. [Source 1]",
                        question, passages, store.cfg)
    right = fit_reasons("Register your product in the Corvan app within 60 days of purchase. [Source 1]",
                        question, passages, store.cfg)
    assert "figure_about_something_else:7" in wrong
    assert right == []


def test_a_quoted_spec_row_is_on_the_questions_focus(search, store):
    question = "How long does the Vela V25 take to charge?"
    passages = search(question)
    focus = answer_focus("Specification: Charging time | Vela V25: about 5 hours [Source 1]", passages, question,
                         semantic_for(store.embeddings))
    assert focus >= store.cfg.answer_focus_ratio


def test_an_error_code_the_troubleshooting_table_explains_passes_the_evidence_check(search, store):
    question = "What does error code E8 mean on a Vela vacuum?"
    passages = search(question)
    numbered = list(enumerate(passages, start=1))
    assert any("E8" in text for text in passages)
    assert evidence_gaps(question, numbered, ["troubleshooting.md"] * len(passages), store.cfg,
                         semantic_for(store.embeddings)) == []


def test_an_error_code_is_not_explained_with_the_router_light_rows_words(search, store):
    question = "What does error code E8 mean on a Vela vacuum?"
    passages = search(question)
    wrong = fit_reasons("The error code E8 is a light solid red. [Source 1]", question, passages, store.cfg)
    right = fit_reasons("Error code E8 means the LiDAR sensor is blocked. [Source 1]", question, passages, store.cfg)
    assert any(reason.startswith("wrong_entity") for reason in wrong)
    assert right == []


def test_standard_delivery_time_is_not_the_time_to_switzerland(search, store):
    question = "How long does delivery to Switzerland take?"
    passages = search(question)
    assert any(reason.startswith("figure_about_something_else")
               for reason in fit_reasons("3-5 business days. [Source 1]", question, passages, store.cfg))
    assert fit_reasons("Delivery to Switzerland takes 5-8 business days. [Source 1]", question, passages,
                       store.cfg) == []
