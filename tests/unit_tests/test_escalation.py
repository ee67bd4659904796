"""The answer loop's escalation: a retry is written by the stronger pool model when one is named,
installed (or served), and the application did not hand Keel its own model."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import HumanMessage

from keel.chains import escalation
from keel.components import Components
from keel.core.configuration import Configuration
from keel.graph import build_graph
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc

FACTS = ["The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
         "The ferry to the mainland leaves every morning at 7 am."]
WRONG = "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>"
RIGHT = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"
STRONG = "qwen2.5-coder-1.5b"


@pytest.fixture
def pool(monkeypatch):
    """Scripted models by pool name, as the chat factory would make them; every pool model installed."""
    models = {"smollm2-135m": ScriptedChatModel(responses=[WRONG], calls=[]),
              STRONG: ScriptedChatModel(responses=[RIGHT], calls=[])}
    monkeypatch.setattr("keel.components.get_chat_model", lambda cfg: models[cfg.chat_model])
    monkeypatch.setattr(escalation, "is_installed", lambda model, cfg: True)
    return models


def ask(**configurable):
    docs = [passage_doc(text, page=n) for n, text in enumerate(FACTS, 1)]
    graph = build_graph(embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                        tokenizer=WordTokenizer())
    return graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]},
                        {"configurable": configurable})


def telemetry(caplog):
    return [r.keel_telemetry for r in caplog.records if hasattr(r, "keel_telemetry")]


def test_the_retry_is_written_by_the_escalation_model(pool, monkeypatch, caplog):
    monkeypatch.setenv("KEEL_CHAT_MODEL", "smollm2-135m")
    caplog.set_level(logging.INFO, logger="keel.answer")
    result = ask(escalation_model=STRONG)
    assert result["status"] == "success" and result["attempts"] == 2 and "Mara Holt" in result["answer"]
    assert len(pool["smollm2-135m"].calls) == 1 and len(pool[STRONG].calls) == 1
    assert [(r["attempt"], r["model"]) for r in telemetry(caplog)] == [(1, "smollm2-135m"), (2, STRONG)]


def test_without_an_escalation_model_the_same_model_retries(pool, caplog):
    caplog.set_level(logging.INFO, logger="keel.answer")
    result = ask()
    assert result["status"] != "success" or "Eiffel" not in result["answer"]
    assert not pool[STRONG].calls and len(pool["smollm2-135m"].calls) == 2
    assert [r["model"] for r in telemetry(caplog)][:2] == ["smollm2-135m", "smollm2-135m"]


def test_a_request_chooses_its_model_for_every_attempt(pool):
    result = ask(chat_model=STRONG)
    assert result["status"] == "success" and result["attempts"] == 1 and not pool["smollm2-135m"].calls


def test_escalation_waits_for_its_attempt_and_needs_the_model(monkeypatch, caplog):
    cfg = Configuration(escalation_model=STRONG, escalate_from_attempt=3)
    installed = {STRONG: False}
    monkeypatch.setattr(escalation, "is_installed", lambda model, cfg: installed[model.name])
    assert escalation.settings_for_attempt(cfg, 2, Components()).chat_model == "smollm2-135m"
    with caplog.at_level(logging.WARNING, logger="keel.answer"):
        assert escalation.settings_for_attempt(cfg, 3, Components()).chat_model == "smollm2-135m"
    assert "keel models install qwen2.5-coder-1.5b" in caplog.text
    installed[STRONG] = True
    assert escalation.settings_for_attempt(cfg, 3, Components()).chat_model == STRONG
    served = Configuration(escalation_model=STRONG, model_endpoints={STRONG: "http://big:8000"})
    installed[STRONG] = False
    assert escalation.settings_for_attempt(served, 2, Components()).chat_model == "smollm2-135m"  # no tokenizer
    named = Configuration(escalation_model=STRONG, model_endpoints={STRONG: "http://big:8000"},
                          model_tokenizers={STRONG: "/models/qwen-tokenizer"})
    assert escalation.settings_for_attempt(named, 2, Components()).chat_model == STRONG


def test_escalation_goes_only_up_the_pool_and_to_a_server_of_its_own(monkeypatch):
    monkeypatch.setattr(escalation, "is_installed", lambda model, cfg: True)
    down = Configuration(chat_model=STRONG, escalation_model="qwen2.5-coder-0.5b")
    assert escalation.settings_for_attempt(down, 2, Components()).chat_model == STRONG
    same_server = Configuration(escalation_model=STRONG, llm_endpoint="http://tgi:8080")
    assert escalation.settings_for_attempt(same_server, 2, Components()).chat_model == "smollm2-135m"
    own_server = Configuration(escalation_model=STRONG, llm_endpoint="http://tgi:8080",
                               model_endpoints={STRONG: "http://big:8000"})
    assert escalation.settings_for_attempt(own_server, 2, Components()).chat_model == STRONG
    reads = Configuration(escalation_model=STRONG, chat_model_reads_images=True)
    assert escalation.settings_for_attempt(reads, 2, Components(), pictures=True).chat_model == "smollm2-135m"
    assert escalation.settings_for_attempt(reads, 2, Components(), pictures=False).chat_model == STRONG


def test_an_applications_own_model_is_never_replaced(monkeypatch):
    monkeypatch.setattr(escalation, "is_installed", lambda model, cfg: True)
    cfg = Configuration(escalation_model=STRONG)
    own = Components(chat_model=ScriptedChatModel(responses=[RIGHT], calls=[]))
    assert escalation.settings_for_attempt(cfg, 2, own) is cfg
    assert escalation.settings_for_attempt(Configuration(escalation_model=STRONG, chat_model_gguf="/m.gguf"), 2,
                                           Components()).chat_model == "smollm2-135m"
