"""The bundled help-desk set measures what it claims: enough questions of each kind, golds that are
really in the named page, and look-alike names that really are in no page."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from keel.evals.qa import BUNDLED_HELPDESK, load_qa_set
from keel.evals.scoring import normalize


@pytest.fixture(scope="module")
def helpdesk():
    qa_set = load_qa_set(BUNDLED_HELPDESK)
    texts = {path: normalize(path.read_text(encoding="utf-8")) for path in qa_set.documents}
    return qa_set, texts


def test_the_set_has_enough_questions_of_each_kind(helpdesk):
    qa_set, _ = helpdesk
    kinds = Counter(q.answerable for q in qa_set.questions)
    assert kinds[True] >= 40 and kinds[False] >= 40
    categories = Counter((q.answerable, q.category) for q in qa_set.questions)
    for category in ("lookalike", "numeric_policy", "troubleshooting", "person"):
        assert categories[(True, category)] >= 3 and categories[(False, category)] >= 3, category
    assert categories[(False, "attribute_missing")] >= 5


def test_the_documents_are_help_desk_pages_of_a_realistic_length(helpdesk):
    qa_set, _ = helpdesk
    assert 5 <= len(qa_set.documents) <= 7
    for path in qa_set.documents:
        words = len(path.read_text(encoding="utf-8").split())
        assert 300 <= words <= 900, (path.name, words)


def test_every_answerable_gold_is_in_its_source_document(helpdesk):
    qa_set, texts = helpdesk
    for question in (q for q in qa_set.questions if q.answerable):
        text = texts[qa_set.document_named(question.source)]
        assert any(normalize(gold) in text for gold in question.answers), (question.qid, question.answers)


def test_unanswerable_look_alikes_appear_in_no_document(helpdesk):
    qa_set, texts = helpdesk
    corpus = " ".join(texts.values())
    lookalikes = [q for q in qa_set.questions if not q.answerable and q.category == "lookalike"]
    assert lookalikes and all(q.absent_terms for q in lookalikes)
    for question in (q for q in qa_set.questions if not q.answerable):
        for term in question.absent_terms:
            assert not re.search(rf"\b{re.escape(normalize(term))}\b", corpus), (question.qid, term)
