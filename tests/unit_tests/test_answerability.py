"""The evidence checks before generation (keel/checks/answerability.py) and the removal of unsupported
sentences from a passing answer, with fakes; the same on the real parts is in
integration_tests/test_answerability.py."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from keel.checks.answerability import NEGATION_NOT_IN_EVIDENCE, TERMS_NOT_IN_EVIDENCE, evidence_gaps
from keel.checks.grounding import question_terms_missing
from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus
from tests.answer_fakes import ScriptedChatModel
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc
from tests.varden_guide import HARBOUR, LIGHTHOUSE, ONE_DOCUMENT, PASSAGES, SOURCES


def gaps(question: str, sources=ONE_DOCUMENT, **overrides) -> list[str]:
    return evidence_gaps(question, PASSAGES, sources, Configuration(**overrides))  # word-overlap ranking


# --- names and numbers must be in the evidence, not merely somewhere in the context -----------------

def test_a_name_found_only_away_from_the_evidence_is_a_gap():
    question = "Was the Varden lighthouse built in 1874 by Jon Berg?"
    assert question_terms_missing(question, [LIGHTHOUSE, HARBOUR]) == []  # the whole context names him
    assert gaps(question, evidence_sentences=1) == [f"{TERMS_NOT_IN_EVIDENCE}:berg,jon"]


def test_names_in_the_evidence_or_the_documents_name_are_no_gap():
    assert gaps("When did Mara Holt build the Varden lighthouse?") == []
    question = "What does the Varden Guide say about the lamp of the lighthouse?"
    assert gaps(question) == []  # "Guide" is only in the document's name
    assert gaps(question, sources=["notes.pdf"] * 2) == [f"{TERMS_NOT_IN_EVIDENCE}:guide"]


def test_more_evidence_sentences_can_cover_a_second_name():
    question = "Who are Mara Holt and Jon Berg?"
    assert gaps(question, evidence_sentences=1)
    assert gaps(question, evidence_sentences=2) == []
    assert gaps(question, sources=SOURCES, evidence_sentences=1) == []  # two documents: the best of each


# --- a negated question needs evidence that states a negation ----------------------------------------

def test_a_negated_question_over_positive_evidence_is_a_gap():
    assert gaps("Which lighthouse was not built by Mara Holt?") == [NEGATION_NOT_IN_EVIDENCE]
    assert gaps("Which lighthouse was built by Mara Holt?") == []


def test_evidence_that_states_a_negation_or_exclusion_answers_a_negated_question():
    assert gaps("Which boats can't moor at the ferry pier?") == []
    excluded = [(1, "Dental care is excluded from the Basic plan. The Basic plan covers eye tests.")]
    assert evidence_gaps("What does the Basic plan not cover?", excluded, ["plans.pdf"], Configuration()) == []


def test_the_negation_patterns_are_configuration():
    assert gaps("Which lighthouse was not built by Mara Holt?", question_negation_pattern="") == []


# --- in the graph: the gate answers without a model call -----------------------------------------------

def make_graph(model, texts):
    documents = [passage_doc(text, source=source, doc_id=f"doc-{i}") for i, (text, source) in
                 enumerate(zip(texts, SOURCES))]
    return build_graph(chat_model=model, embeddings=BagOfWordsEmbeddings(),
                       retriever=StaticRetriever(documents=documents), tokenizer=WordTokenizer())


def ask(graph, question, **configurable):
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": configurable})


def test_the_graph_answers_a_gap_with_insufficient_context_and_no_model_call():
    model = ScriptedChatModel(responses=["<answer>The Varden lighthouse [Source 1].</answer>"], calls=[])
    result = ask(make_graph(model, [LIGHTHOUSE, HARBOUR]), "Which lighthouse was not built by Mara Holt?")
    assert result["status"] == AnswerStatus.INSUFFICIENT_CONTEXT.value
    assert result["reasons"] == [NEGATION_NOT_IN_EVIDENCE]
    assert model.calls == [] and result["attempts"] == 0


def test_with_require_evidence_off_the_model_is_asked():
    model = ScriptedChatModel(responses=["<answer>The Varden lighthouse [Source 1].</answer>"], calls=[])
    ask(make_graph(model, [LIGHTHOUSE, HARBOUR]), "Which lighthouse was not built by Mara Holt?",
        require_evidence=False)
    assert len(model.calls) == 1


# --- a passing answer loses its unsupported sentences -------------------------------------------------

MIXED = ("<answer>The Varden lighthouse was built in 1874 [Source 1]. It was built by the engineer Mara Holt "
         "[Source 1]. Its lamp can be seen from 22 nautical miles away [Source 1]. "
         "Queen Sofia opened it with a golden key.</answer>")


def test_unsupported_sentences_are_dropped_from_a_passing_answer_and_the_stream_is_told():
    graph = make_graph(ScriptedChatModel(responses=[MIXED], calls=[]), [LIGHTHOUSE])
    custom, final = [], None
    for namespace, mode, payload in graph.stream(
            {"messages": [HumanMessage("When was the Varden lighthouse built?")]}, {"configurable": {}},
            stream_mode=["custom", "values"], subgraphs=True):
        if mode == "custom":
            custom.append(payload)
        elif not namespace:
            final = payload
    assert final["status"] == "success" and final["attempts"] == 1  # 3 of 4 grounded: passes 0.7
    assert "Sofia" not in final["answer"] and "22 nautical miles" in final["answer"]
    assert "ungrounded_sentences_dropped:1" in final["reasons"]
    reverts = [e for e in custom if e["event"] == "keel.revert" and e["reason"] == "ungrounded_sentences"]
    assert reverts and reverts[-1]["text"] == final["answer"]


def test_with_dropping_off_the_passing_answer_is_kept_whole():
    graph = make_graph(ScriptedChatModel(responses=[MIXED], calls=[]), [LIGHTHOUSE])
    result = ask(graph, "When was the Varden lighthouse built?", drop_ungrounded_sentences=False)
    assert result["status"] == "success" and "Queen Sofia" in result["answer"]
    assert not any(r.startswith("ungrounded_sentences_dropped") for r in result["reasons"])


def test_a_question_over_two_documents_finds_evidence_in_each():
    fees = (3, "Keel Insurance charges no fee for refunds. Claims are paid within 30 days.")
    passages = [(1, LIGHTHOUSE), (2, "Harbor Health refunds a visit within 90 days. Refunds need a receipt."), fees]
    question = "How do the refund rules of Harbor Health and Keel Insurance differ?"
    sources = ["lighthouse.pdf", "harbor-guide.pdf", "keel-policy.pdf"]
    assert evidence_gaps(question, passages, sources, Configuration(evidence_sentences=1)) == []
    # the same text as one document: its one best sentence names only Harbor Health
    one = ["guide.pdf"] * 3
    assert evidence_gaps(question, passages, one, Configuration(evidence_sentences=1)) == [
        f"{TERMS_NOT_IN_EVIDENCE}:insurance,keel"]


def test_a_sectioned_answer_loses_the_unsupported_sentence_in_its_answer_field_too():
    sectioned = ("[CITATION] Source 1 [ANSWER] The Varden lighthouse was built in 1874 [Source 1]. It was built by "
                 "the engineer Mara Holt [Source 1]. Its lamp can be seen from 22 nautical miles away [Source 1]. "
                 "Queen Sofia opened it with a golden key. [EXPLANATION] Source 1 says so.")
    graph = make_graph(ScriptedChatModel(responses=[sectioned], calls=[]), [LIGHTHOUSE])
    result = ask(graph, "When was the Varden lighthouse built?", answer_format="sectioned")
    assert result["status"] == "success", result
    assert "Sofia" not in result["answer"] and "Sofia" not in result["sections"]["answer"]
    assert "1874" in result["sections"]["answer"]


def test_bad_evidence_settings_are_errors_that_name_the_setting():
    with pytest.raises(ValueError, match="evidence_sentences"):
        Configuration(evidence_sentences=0)
    with pytest.raises(ValueError, match="question_negation_pattern"):
        Configuration.from_runnable_config({"configurable": {"question_negation_pattern": "(not"}})


def test_the_sentence_that_says_every_name_the_question_gives_is_evidence_before_closer_ones():
    """The embedding prefers the line about the clinic's founding; the line that says "Chief Medical
    Officer" (under the heading that names the clinic) is the one the question is about."""
    page = ("## About the Alder Clinic\n\nThe Alder Clinic was founded in 2009 and is led by its board. "
            "Ana Ruiz is the Chief Executive Officer; Ben Cole is the Chief Medical Officer.")
    question = "Who is the Alder Clinic's Chief Medical Officer?"
    closest_to_the_founding = lambda q, sentences: [0.9 if "founded" in s else 0.3 for s in sentences]  # noqa: E731
    cfg = Configuration(evidence_sentences=1)
    assert evidence_gaps(question, [(1, page)], ["about.md"], cfg, closest_to_the_founding) == []
    # the founding line alone does not say who the Chief Medical Officer is
    founding = "## About the Alder Clinic\n\nThe Alder Clinic was founded in 2009 and is led by its board."
    assert evidence_gaps(question, [(1, founding)], ["about.md"], cfg, closest_to_the_founding) == [
        f"{TERMS_NOT_IN_EVIDENCE}:chief,medical,officer"]


def test_a_question_whose_other_words_only_say_the_answers_type_still_gets_the_line_naming_it():
    page = ("The Alder lamp costs EUR 20 and ships in a week. Lamps are made in Leiden. "
            "The Zebra costs EUR 40.")
    closest_to_the_lamp = lambda q, sentences: [0.9 if "lamp" in s.lower() else 0.3 for s in sentences]  # noqa: E731
    assert evidence_gaps("How much does the Zebra cost?", [(1, page)], ["prices.md"],
                         Configuration(evidence_sentences=1), closest_to_the_lamp) == []


# --- a statement that says the whole question ----------------------------------------------------------

ACCESSORIES = """## Vela accessories
- Filter pack: 3 Vela filters for EUR 19.90
- Side brushes: a pair of brushes for EUR 12.50"""


@pytest.mark.parametrize("question, says_it", [
    ("How much does a pack of 3 Vela filters cost?", True),   # every word, and an amount
    ("How much does a pack of 3 Vela bags cost?", False),     # no line says "bags"
    ("How long do Vela filters last?", False),                 # the filter line holds no duration
    ("What is in a Vela filter pack?", False),                 # no type asked: a look-alike says it all too
    ("How much do the Vela accessories cost?", True),          # "accessories" is the heading's
])
def test_a_statement_says_the_whole_question_only_with_every_word_and_an_answer_of_its_type(question, says_it):
    from keel.checks.answerability import states_whole_question

    assert states_whole_question(question, [ACCESSORIES]) is says_it
