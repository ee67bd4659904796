"""The graph's routing, retry loop and statuses, with fakes (deterministic)."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from keel.graph import build_graph
from keel.graph.chat_graph import ANSWERING_NODES
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
FALLBACK = "I don't know based on the provided documents."


def make_graph(responses, documents, **kwargs):
    return build_graph(
        chat_model=FakeListChatModel(responses=responses),
        embeddings=BagOfWordsEmbeddings(),
        retriever=StaticRetriever(documents=documents),
        tokenizer=WordTokenizer(),
        **kwargs,
    )


def ask(graph, question, **configurable):
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": configurable})


def test_grounded_answer_succeeds_on_first_attempt_with_its_source():
    graph = make_graph(
        ["<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"],
        [passage_doc(FACT, page=3)],
    )
    result = ask(graph, "Who built the Varden lighthouse?")
    assert result["status"] == "success"
    assert result["route"] == "single_doc"
    assert "Mara Holt" in result["answer"] and "<answer>" not in result["answer"]
    assert result["attempts"] == 1
    assert result["sources"] == [{"source": "handbook.pdf", "page": 3, "doc_id": "doc-1", "score": 0.8}]
    assert result["quality"] >= 0.6


def test_ungrounded_answers_are_retried_then_extractive_answer_is_used():
    invented = "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>"
    graph = make_graph([invented, invented], [passage_doc(FACT)])
    result = ask(graph, "Who built the Varden lighthouse?")
    assert result["attempts"] == 3
    assert result["status"] == "success"
    assert "Mara Holt" in result["answer"] and "Eiffel" not in result["answer"]


def test_question_without_relevant_context_gets_the_fallback_in_strict_mode():
    graph = make_graph(["should never be called"], [passage_doc(FACT, similarity=0.05)])
    result = ask(graph, "What is the boiling point of mercury?")
    assert result["route"] == "pretrained_corpus"
    assert result["status"] == "insufficient_context"
    assert result["answer"] == FALLBACK
    assert result["sources"] == []


def test_open_mode_lets_the_model_answer_general_questions():
    graph = make_graph(["(Not from your documents) Mercury boils at 357 degrees Celsius."], [])
    result = ask(graph, "What is the boiling point of mercury?", grounding_mode="open")
    assert result["route"] == "pretrained_corpus"
    assert result["status"] == "success"
    assert "357" in result["answer"]


def test_all_attempts_failing_gives_the_fallback_never_the_failed_text():
    leak = "Based on the analysis of the context (in the context of User): ok."
    graph = make_graph([leak, leak], [passage_doc("Completely unrelated text about tides and moons.")])
    # the term and evidence gates off: "Varden" is in no passage, which alone would end the turn before the model
    result = ask(graph, "Who built the Varden lighthouse?", require_question_terms=False,
                 require_evidence=False)
    # the model's two answers are ungrounded (deducted); the extractive attempt finds nothing close to
    # the question and abstains: the best failed attempt says why
    assert result["status"] == "hallucination_detected"
    assert "ungrounded" in result["reasons"]
    assert result["answer"] == FALLBACK
    assert "analysis" not in result["answer"]


def test_two_relevant_documents_route_to_multi_doc():
    docs = [
        passage_doc(FACT, source="a.pdf", doc_id="doc-a"),
        passage_doc("The Varden lighthouse keeper in 1900 was Ilse Brand.", source="b.pdf", doc_id="doc-b"),
    ]
    graph = make_graph(["<answer>It was built by Mara Holt [Source 1].</answer>"], docs)
    result = ask(graph, "Who built the Varden lighthouse and who kept it?")
    assert result["route"] == "multi_doc"


def test_too_long_input_is_refused_without_calling_the_model():
    graph = make_graph(["never"], [passage_doc(FACT)])
    result = ask(graph, "word " * 50, max_input_tokens=10)
    assert result["status"] == "exceeded_token_budget"
    assert "50 tokens" in result["answer"]


def test_unsafe_input_is_refused():
    graph = make_graph(["never"], [passage_doc(FACT)])
    result = ask(graph, "How do I build a bomb at home?")
    assert result["status"] == "not_safe"


def test_model_failure_is_reported_as_error_status():
    class Broken(FakeListChatModel):
        def _call(self, *args, **kwargs):
            raise ConnectionError("endpoint http://127.0.0.1:9 refused")

        def _stream(self, *args, **kwargs):  # the answer loop streams
            raise ConnectionError("endpoint http://127.0.0.1:9 refused")

    graph = build_graph(
        chat_model=Broken(responses=["x"]),
        embeddings=BagOfWordsEmbeddings(),
        retriever=StaticRetriever(documents=[passage_doc(FACT)]),
        tokenizer=WordTokenizer(),
    )
    result = ask(graph, "Who built the Varden lighthouse?")
    assert result["status"] == "error"
    assert "127.0.0.1:9" not in result["answer"] and "ConnectionError" not in result["answer"]  # no internals
    assert "model_unavailable:Broken" in result["reasons"]  # the reason names the model


def test_graph_has_the_guardrail_routing_and_answering_nodes():
    graph = make_graph(["x"], [])
    nodes = set(graph.get_graph().nodes)
    expected = {"guardrails", "exceeded_token_budget", "not_safe", "prefill_system_prompt", "route_query"}
    assert expected | set(ANSWERING_NODES) <= nodes


def test_only_success_is_safe():
    from keel.core.state import AnswerStatus

    assert [s.value for s in AnswerStatus if s.is_safe] == ["success"]


def test_keel_ask_grounding_flag_reaches_the_graph_config():
    from keel.cli.ask import checked_request
    from keel.cli.main import command_parser
    from keel.cli.running import run_config

    for flag, expected in (([], "strict"), (["--grounding", "open"], "open"), (["--grounding", "strict"], "strict")):
        args = command_parser().parse_args(["ask", "What is mercury?", *flag])
        cfg = checked_request(args, "conv").configuration()
        assert run_config(cfg, "conv")["configurable"]["grounding_mode"] == expected
    import pytest

    with pytest.raises(SystemExit):
        command_parser().parse_args(["ask", "q", "--grounding", "loose"])
