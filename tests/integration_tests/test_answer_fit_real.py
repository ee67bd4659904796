"""The answer-fit checks on real parts: the bundled help-desk pages ingested as `keel ingest` does,
searched in real Redis Stack with the real embeddings, the checks run on what comes back."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from keel.checks.answer_fit import fit_reasons
from keel.checks.answer_topic import topic_relevance
from keel.checks.answerability import evidence_gaps, evidence_sentences
from keel.checks.grounding import answer_focus
from keel.checks.semantic import semantic_for
from keel.loaders.pipeline import ingest
from keel.retrievers.parent_document import KeelParentRetriever

PAGES = Path(__file__).resolve().parents[2] / "keel" / "evals" / "helpdesk" / "docs"

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def store(make_module_store):
    return make_module_store()


def searching(store, *names: str):
    """The pages ingested for a new user as `keel ingest` does; a question → its retrieved passages."""
    user = f"fit-{uuid.uuid4().hex[:6]}"
    assert ingest([PAGES / name for name in names], store, store.cfg, user_id=user).errors == []
    retriever = KeelParentRetriever(store=store, user_id=user)
    return lambda question: [doc.page_content for doc in retriever.invoke(question)]


@pytest.fixture(scope="module")
def search(store):
    return searching(store, "returns-refunds-warranty.md", "vela-robot-vacuums.md", "troubleshooting.md",
                     "shipping-and-orders.txt")


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


@pytest.fixture(scope="module")
def company_search(store):
    return searching(store, "support-and-company.md", "returns-refunds-warranty.md")


def test_who_runs_the_press_office_is_not_the_support_teams_head(company_search, store):
    question = "Who runs Corvan Home's press office?"
    passages = company_search(question)
    wrong = fit_reasons("Daniel Okafor runs the press office. [Source 1]", question, passages, store.cfg)
    assert any(reason.startswith("name_about_something_else") for reason in wrong)
    question = "Who is the Chief Executive Officer of Corvan Home?"
    assert fit_reasons("Ingrid Maas is the Chief Executive Officer. [Source 1]", question,
                       company_search(question), store.cfg) == []


def test_no_head_of_marketing_is_named_from_the_support_heads_line(company_search, store):
    """The pages name a Head of Customer Support and no one in marketing: a model restating the
    question around his name is refused, as is the quote of his line; the question about the role the
    pages do name is answered."""
    question = "Who is Corvan Home's head of marketing?"
    passages = company_search(question)
    restated = fit_reasons("The head of marketing is Daniel Okafor. [Source 1]", question, passages, store.cfg)
    assert any(reason.startswith("question_word_not_in_documents:marketing") for reason in restated)
    quoted = fit_reasons("The team is led by **Daniel Okafor**, Head of Customer Support, who joined Corvan Home in "
                         "2019. [Source 1]", question, passages, store.cfg)
    assert any(reason.startswith("name_about_something_else") for reason in quoted)
    question = "Who is Corvan Home's head of customer support?"
    assert fit_reasons("The team is led by **Daniel Okafor**, Head of Customer Support. [Source 1]", question,
                       company_search(question), store.cfg) == []


def test_the_warranty_of_refurbished_products_is_not_the_new_products_warranty(company_search, store):
    question = "What is the warranty period for refurbished products?"
    wrong = fit_reasons("The warranty period for refurbished products is 2 years. [Source 1]", question,
                        company_search(question), store.cfg)
    assert any(reason.startswith("question_word_not_in_documents") for reason in wrong)
    question = "How long is the manufacturer warranty on the Vela V20?"
    assert fit_reasons("The warranty period is 2 years for the Vela V20. [Source 1]", question,
                       company_search(question), store.cfg) == []


def test_a_repairs_cost_is_not_the_damaged_parcels_no_cost(company_search, store):
    question = "How much does a repair outside the warranty cost?"
    wrong = fit_reasons("We send a replacement at no cost. [Source 1]", question, company_search(question), store.cfg)
    assert "figure_about_something_else:no cost" in wrong
    question = "How much does return shipping cost within the EU?"
    assert fit_reasons("Return shipping is free within the EU. [Source 1]", question, company_search(question),
                       store.cfg) == []


def test_the_line_that_says_chief_technology_officer_is_evidence_for_who_holds_that_role(company_search, store):
    question = "Who is Corvan Home's Chief Technology Officer?"
    passages = company_search(question)
    numbered = list(enumerate(passages, start=1))
    assert evidence_gaps(question, numbered, ["support-and-company.md"] * len(passages), store.cfg,
                         semantic_for(store.embeddings)) == []
    chosen = evidence_sentences(question, numbered, store.cfg.evidence_sentences, semantic_for(store.embeddings))
    assert any("Chief Technology Officer" in sentence for _, sentence in chosen)


def test_the_founding_year_rests_on_the_line_that_says_founded(company_search, store):
    question = "In which year was Corvan Home founded?"
    passages = company_search(question)
    similarities = semantic_for(store.embeddings)
    ratio = store.cfg.answer_focus_ratio
    assert answer_focus("2014 [Source 1]", passages, question, similarities) < ratio  # the embedding alone
    assert answer_focus("2014 [Source 1]", passages, question,
                        topic_relevance(similarities, store.cfg.topic_relevance_weight)) >= ratio


def test_an_error_codes_meaning_stitched_from_other_lines_is_refused_and_its_row_is_on_focus(search, store):
    """"E4 is a firmware error that occurs when the router fails to reset" shares only "reset"
    (a heading's word) with the E4 row; the row itself, quoted, is on the question's focus though
    the page's introduction to error codes reads closer to the question."""
    question = "What does error code E4 mean on a Vela vacuum?"
    passages = search(question)
    stitched = fit_reasons("The error code E4 is a firmware error that occurs when the Nimbus router fails to reset.",
                           question, passages, store.cfg)
    assert any(reason.startswith("wrong_entity") for reason in stitched)
    row = next(line for text in passages for line in text.splitlines() if "E4" in line and "Cliff sensor" in line)
    relevance = topic_relevance(semantic_for(store.embeddings), store.cfg.topic_relevance_weight)
    assert fit_reasons(f"{row} [Source 1]", question, passages, store.cfg) == []
    assert answer_focus(f"{row} [Source 1]", passages, question, relevance) >= store.cfg.answer_focus_ratio


def test_a_price_row_that_says_the_whole_question_waives_the_low_similarity(store):
    """all-MiniLM puts "How much does a pack of 3 Vela filters cost?" below min_confidence against
    the spare-parts line that prices it; the line says every word of the question and an amount,
    so the model is asked. A look-alike question about mop pads has no such line."""
    from keel.checks.answerability import states_whole_question
    from keel.checks.confidence import retrieval_confidence

    user = f"fit-{uuid.uuid4().hex[:6]}"
    assert ingest(sorted(PAGES.iterdir()), store, store.cfg, user_id=user).errors == []
    retriever = KeelParentRetriever(store=store, user_id=user)
    cfg = store.cfg

    def gate(question: str) -> tuple[float, bool]:
        parents = [p for p in retriever.invoke(question) if p.metadata["max_similarity"] >= cfg.relevance_threshold]
        confidence = retrieval_confidence([p.metadata["max_similarity"] for p in parents], cfg.confidence_slope,
                                          cfg.confidence_intercept)
        return confidence, states_whole_question(question, [p.page_content for p in parents])

    confidence, whole = gate("How much does a pack of 3 Vela filters cost?")
    assert confidence < cfg.min_confidence and whole
    assert gate("How much does a pack of 3 Vela mop pads cost?")[1] is False


@pytest.mark.parametrize("question, wrong, wrong_reason, right", [
    ("How much does standard delivery cost for orders under EUR 50?",
     "Standard delivery is free for orders over EUR 50. [Source 1]", "figure_about_something_else:50",
     "Below EUR 50 it costs EUR 4.95. [Source 1]"),
    ("How soon after delivery must I report a damaged parcel?",
     "A damaged parcel must be reported within 2 business days. [Source 1]", "figure_about_something_else:2",
     "Tell us within 48 hours of delivery. [Source 1]"),
    ("How often should the Vela filter be replaced?",
     "The Vela filter should be replaced every 2 to 3 months. [Source 1]", "figure_from_another_statement:2-3",
     "The filter should be replaced every 2 months. [Source 1]"),
])
def test_figures_told_about_another_condition_line_or_range_are_refused(search, store, question, wrong, wrong_reason,
                                                                          right):
    passages = search(question)
    assert wrong_reason in fit_reasons(wrong, question, passages, store.cfg)
    assert fit_reasons(right, question, passages, store.cfg) == []


def test_the_vela_error_rows_do_not_explain_a_nimbus_routers_code(search, store):
    from keel.checks.answer_fit import sentence_fits
    from keel.checks.question_coverage import context_vocabulary
    from keel.checks.statements import statements

    question = "What does error code E5 mean on a Nimbus router?"  # E5 is a Vela vacuum's code only
    passages = search(question)
    context = statements(passages)
    row = next(s.text for s in context if s.text.startswith("Code: E5"))
    assert not sentence_fits(row, question, context, context_vocabulary(context))
    assert sentence_fits(row, "What does error code E5 mean on a Vela vacuum?", context, context_vocabulary(context))


HANDBOOK = PAGES.parents[1] / "sets" / "staff-handbook" / "docs"


@pytest.fixture(scope="module")
def handbook(store):
    user = f"fit-{uuid.uuid4().hex[:6]}"
    assert ingest(sorted(HANDBOOK.glob("*.md")), store, store.cfg, user_id=user).errors == []
    retriever = KeelParentRetriever(store=store, user_id=user)
    return lambda question: [doc.page_content for doc in retriever.invoke(question)]


@pytest.mark.parametrize("question, asked, sibling", [
    ("How long is the probation period for grade E employees?", "E", "grade"),
    ("What is the hotel limit per night for a Tier 4 city?", "4", "tier"),
])
def test_a_siblings_table_row_is_neither_quoted_nor_passed_for_the_asked_one(handbook, store, question, asked, sibling):
    """The handbook's tables give grades A to D (or tiers 1 to 3) but not the asked one: the best row
    of the asked type is a sibling's. Without the rule it is quoted as the answer."""
    import dataclasses

    from keel.chains.extractive import extractive_answer
    from keel.checks.semantic import semantic_for

    passages = handbook(question)
    numbered = list(enumerate(passages, 1))
    similarity = semantic_for(store.embeddings)
    off = dataclasses.replace(store.cfg, refuse_sibling_evidence=False)
    quoted = extractive_answer(question, numbered, off, similarity)
    assert quoted != off.fallback_answer and sibling in quoted.lower()  # a sibling's row, read as the answer
    assert any(reason.startswith(f"about_a_sibling:{asked}>") for reason in fit_reasons(quoted, question, passages,
                                                                                       store.cfg))
    assert extractive_answer(question, numbered, store.cfg, similarity) == store.cfg.fallback_answer


def test_the_asked_grades_row_is_still_quoted(handbook, store):
    from keel.chains.extractive import extractive_answer
    from keel.checks.semantic import semantic_for

    question = "How long is the probation period for grade C employees?"
    passages = handbook(question)
    quoted = extractive_answer(question, list(enumerate(passages, 1)), store.cfg, semantic_for(store.embeddings))
    assert "6 months" in quoted or "Grade C" in quoted, quoted
    assert not any(r.startswith("about_a_sibling") for r in fit_reasons(quoted, question, passages, store.cfg))
