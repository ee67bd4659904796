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


def test_german_french_and_spanish_questions_get_the_fallback_in_their_language():
    graph = _graph()
    for question, language in (("Wie viel kostet der Familientarif im Monat?", "de"),
                               ("Combien coûte l'abonnement familial par mois ?", "fr"),
                               ("¿Cuánto cuesta el plan familiar al mes?", "es")):
        result = graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": language}})
        assert result["status"] == "insufficient_context"
        assert result["answer"] == Configuration().fallback_answers[language] != Configuration().fallback_answer


def test_language_matching_can_be_switched_off():
    graph = _graph()
    config = {"configurable": {"enforce_language_match": False}}
    result = graph.invoke({"messages": [HumanMessage("क्लिनिक शनिवार को कब खुलता है?")]}, config)
    assert result["answer"] == Configuration().fallback_answer


# --- the answer's language: the chat model's languages, the rest framed ------------------------------

def test_a_question_in_a_language_the_model_does_not_write_is_answered_in_the_default_one():
    from keel.checks.language import answer_language

    cfg = Configuration()
    assert cfg.answer_languages == ("en",)
    assert answer_language("de", cfg) == "en" and answer_language("en", cfg) == "en"
    assert answer_language("de", Configuration(answer_languages=("en", "de"))) == "de"


def test_the_frame_says_in_the_askers_language_that_the_answer_is_in_english():
    from keel.checks.language import framed_answer

    cfg = Configuration()
    framed = framed_answer("It weighs 3.4 kg [Source 1].", "de", cfg)
    assert framed.startswith("Aus Ihren Dokumenten (die Antwort ist auf Englisch") and framed.endswith("[Source 1].")
    assert framed_answer("Il pèse 3,4 kg [Source 1].", "fr", Configuration(answer_languages=("en", "fr"))) \
        == "Il pèse 3,4 kg [Source 1]."  # written in the asker's language: no frame
    assert framed_answer("It weighs 3.4 kg.", "en", cfg) == "It weighs 3.4 kg."
    assert framed_answer("It weighs 3.4 kg.", "sw", cfg) == "It weighs 3.4 kg."  # no frame for the language: as is


def test_the_system_prompt_asks_for_the_language_the_model_writes():
    from nodes.prefill_system_prompt import prefill_system_prompt

    german = {"question": "Wie viel wiegt der Staubsauger im Betrieb?"}
    update = prefill_system_prompt(german, {"configurable": {}})
    assert update["language"] == "de" and update["answer_language"] == "en"
    assert "Always answer in English." in update["system_prompt"]
    update = prefill_system_prompt(german, {"configurable": {"answer_languages": ["en", "de"]}})
    assert update["answer_language"] == "de" and "Always answer in German." in update["system_prompt"]


def test_a_successful_answer_to_a_german_question_is_framed_and_a_failed_one_is_the_german_fallback():
    from keel.core.state import Route
    from nodes.answering import turn_result

    cfg = Configuration()
    state = {"question": "Wie viel wiegt der V20?", "language": "de", "answer_language": "en"}
    passage = {"number": 1, "text": "The V20 weighs 3.4 kg.", "source": "vela.md", "doc_id": "d", "page": 1, "score": 0.9}
    ok = turn_result({"status": "success", "answer": "It weighs 3.4 kg [Source 1]."}, [passage], Route.SINGLE_DOC,
                     state, cfg, 0.9)
    assert ok["answer"].startswith(cfg.answer_frames["de"].format(language="Englisch"))
    assert ok["messages"][-1].content == ok["answer"]
    failed = turn_result({"status": "low_confidence", "answer": cfg.fallback_answer + " "}, [passage],
                         Route.SINGLE_DOC, state, cfg, 0.2)
    assert failed["answer"] == cfg.fallback_answers["de"]
