"""Question language detection (packaged, offline) and the fallback in the question's language."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from keel.checks.language import detect_language, localized_fallback
from keel.graph import build_graph
from keel.core.configuration import Configuration
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc


def test_detects_languages_and_falls_back_to_the_default_on_weak_evidence():
    assert detect_language("When does the clinic open on Saturdays?") == "en"
    assert detect_language("क्लिनिक शनिवार को कब खुलता है?") == "hi"
    assert detect_language("Wann öffnet die Klinik am Samstag?") == "de"
    assert detect_language("Holt?") == "en"  # too short to switch language


def test_localized_fallback_honours_a_deployment_override():
    cfg = Configuration()
    assert localized_fallback("hi", cfg) == cfg.fallback_answers["hi"]
    assert localized_fallback("sw", cfg) == cfg.fallback_answer
    custom = Configuration(fallback_answer="Sorry, our handbook does not say.")
    assert localized_fallback("en", custom) == "Sorry, our handbook does not say."


def _graph():
    return build_graph(
        chat_model=FakeListChatModel(responses=["never"]),
        embeddings=BagOfWordsEmbeddings(),
        retriever=StaticRetriever(documents=[passage_doc("Unrelated tide tables.", similarity=0.05)]),
        tokenizer=WordTokenizer(),
    )


def test_hindi_question_gets_the_hindi_fallback_and_the_system_prompt_names_the_language():
    graph = _graph()
    config = {"configurable": {"thread_id": "hi-1"}}
    result = graph.invoke({"messages": [HumanMessage("क्लिनिक शनिवार को कब खुलता है?")]}, config)
    assert result["status"] == "insufficient_context"
    assert result["answer"] == Configuration().fallback_answers["hi"]


def test_language_matching_can_be_switched_off():
    graph = _graph()
    config = {"configurable": {"enforce_language_match": False}}
    result = graph.invoke({"messages": [HumanMessage("क्लिनिक शनिवार को कब खुलता है?")]}, config)
    assert result["answer"] == Configuration().fallback_answer
