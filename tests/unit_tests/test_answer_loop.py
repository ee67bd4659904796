"""The answer subgraph as a whole, with fakes: the quality retry loop and its strategies, telemetry,
streamed events, and early-EOS prevention's degradation on endpoints (deterministic)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch
from langchain_core.messages import HumanMessage

from keel.chains.prompts import CONTINUATION_INDICATOR
from keel.graph import build_graph
from keel.graph.answer_graph import build_answer_graph
from keel.models import chat
from keel.components import Components
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc

FACTS = [
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
    "The lighthouse lamp can be seen from 22 nautical miles away.",
    "The island school has 48 pupils and two teachers.",
    "The ferry to the mainland leaves every morning at 7 am.",
]
QUESTION = "Who built the Varden lighthouse?"


def make_graph(model):
    docs = [passage_doc(text, page=n, doc_id="doc-1") for n, text in enumerate(FACTS, 1)]
    return build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                       tokenizer=WordTokenizer())


def ask(graph, question=QUESTION, **configurable):
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": configurable})


@pytest.fixture
def telemetry(caplog):
    caplog.set_level(logging.INFO, logger="keel.answer")
    return lambda: [r.keel_telemetry for r in caplog.records if hasattr(r, "keel_telemetry")]


def test_a_bad_answer_is_retried_with_a_stricter_strategy_then_accepted(telemetry):
    model = ScriptedChatModel(responses=[
        "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>",
        "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>",
    ])
    result = ask(make_graph(model))
    assert result["status"] == "success" and result["attempts"] == 2
    assert "Mara Holt" in result["answer"] and "Eiffel" not in result["answer"]
    first, second = model.calls
    assert first["kwargs"]["temperature"] > second["kwargs"]["temperature"] == 0.0  # lower temperature
    shown = [second["messages"][-1].content.count("[Source"), first["messages"][-1].content.count("[Source")]
    assert shown[0] < shown[1]  # less context
    assert "CRITICAL RULES" in first["messages"][0].content and "Example 3" in first["messages"][0].content
    records = telemetry()
    assert [r["attempt"] for r in records] == [1, 2]
    assert [r["strategy"] for r in records] == ["grounded", "strict"]
    assert records[0]["quality"] < 0.6 <= records[1]["quality"] and not records[0]["accepted"]
    assert records[1]["parse_layer"] == "xml" and "ungrounded" in records[0]["deductions"]
    for record in records:
        assert {"continuations", "tokens", "timings", "deductions", "parse_layer", "stops"} <= set(record)
        assert {"generation_s", "checks_s", "validation_s"} <= set(record["timings"])
        assert record["tokens"]["completion_tokens"] > 0


def test_when_every_attempt_fails_the_user_gets_the_fallback_not_the_failed_text(telemetry):
    invented = "<answer>Gustave Eiffel designed it in Paris in 1920, with help from Napoleon.</answer>"
    model = ScriptedChatModel(responses=[invented])
    # names the question's Varden (the pre-generation gate lets it through) but not who built anything
    docs = [passage_doc("Tides rise twice a day near the Varden harbour wall.", doc_id="doc-1")]
    graph = build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                        tokenizer=WordTokenizer())
    result = ask(graph)
    assert result["answer"] == "I don't know based on the provided documents."
    assert result["status"] in {"low_confidence", "hallucination_detected", "insufficient_context"}
    assert "Eiffel" not in result["answer"]
    assert len(telemetry()) == 3 and telemetry()[-1]["strategy"] == "extractive"


def test_the_loop_never_sleeps(monkeypatch):
    def no_sleep(seconds):
        raise AssertionError("blocking sleep in the answer loop")

    monkeypatch.setattr("time.sleep", no_sleep)
    model = ScriptedChatModel(responses=["<answer>Gustave Eiffel built it.</answer>"])
    assert ask(make_graph(model))["attempts"] == 3


def test_subgraph_output_carries_parse_layer_attempts_and_continuations():
    model = ScriptedChatModel(responses=[
        "<answer>The Varden lighthouse was built in 1874 by", "the engineer Mara Holt [Source 1]."])
    components = Components(chat_model=model, embeddings=KeywordEmbeddings(), tokenizer=WordTokenizer())
    passages = [{"number": 1, "text": FACTS[0], "source": "a.pdf", "page": 1, "doc_id": "d", "score": 0.8,
                 "similarity": 0.8}]
    result = build_answer_graph(components).invoke(
        {"question": QUESTION, "system_prompt": "", "route": "single_doc", "passages": passages, "history": []})
    assert result["status"] == "success" and result["attempt"] == 1
    assert result["continuations"] == 1 and result["parse_layer"] == "xml"
    assert result["answer"].endswith("Mara Holt [Source 1].")


def test_the_stream_shows_filtered_text_and_the_indicator_as_its_own_event():
    model = ScriptedChatModel(responses=[
        "<thinking>Source 1 names the builder.</thinking><answer>The Varden lighthouse was built in 1874 by",
        "the engineer Mara Holt [Source 1].</answer><|im_end|>",
    ], chunk_chars=3)
    graph = make_graph(model)
    custom, messages, final = [], [], None
    for namespace, mode, payload in graph.stream({"messages": [HumanMessage(QUESTION)]}, {"configurable": {}},
                                                 stream_mode=["custom", "messages", "values"], subgraphs=True):
        if mode == "custom":
            custom.append(payload)
        elif mode == "messages":
            messages.append(payload)
        elif mode == "values" and not namespace:
            final = payload
    kinds = [event["event"] for event in custom]
    assert kinds[:2] == ["keel.progress", "keel.attempt"] and "keel.continuation" in kinds
    indicator = custom[kinds.index("keel.continuation")]
    assert indicator["text"] == CONTINUATION_INDICATOR
    streamed = "".join(event["text"] for event in custom if event["event"] == "keel.token")
    for marker in ("<thinking>", "Source 1 names", "<answer>", "</answer>", "<|im_end|>", "<|im"):
        assert marker not in streamed
    assert "Mara Holt" in streamed and CONTINUATION_INDICATOR not in streamed
    assert final["status"] == "success" and CONTINUATION_INDICATOR not in final["answer"]
    assert final["continuations"] == 1
    assert not [m for m in messages if m[1].get("langgraph_node") == "generate_answer"]  # raw tokens stay hidden


def test_early_eos_blocker_blocks_eos_until_95_percent_then_allows_it():
    blocker = chat.EarlyEOSBlocker([2, 0], max_new_tokens=20, min_fraction=0.95)
    prompt = torch.zeros((1, 7), dtype=torch.long)
    for generated in range(0, 21):
        scores = torch.zeros((1, 10))
        out = blocker(torch.zeros((1, 7 + generated), dtype=torch.long) if generated else prompt, scores)
        blocked = bool(torch.isinf(out[0, 2])) and bool(torch.isinf(out[0, 0]))
        assert blocked is (generated < 19), generated  # ceil(0.95 * 20) = 19
        assert not torch.isinf(out[0, 5])
    assert chat.min_new_tokens(256, 0.95) == 244


class _RejectingEndpoint(ScriptedChatModel):
    """An endpoint-backed chat model whose server rejects some request fields with HTTP 422."""

    llm: object = None
    rejects: tuple = ()

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        extra = kwargs.get("extra_body") or {}
        if any(key in extra for key in self.rejects):
            self.calls.append({"messages": messages, "kwargs": kwargs})
            raise _http_error(422)
        yield from super()._stream(messages, stop, run_manager, **kwargs)


def _http_error(status):
    error = RuntimeError(f"HTTP {status}")
    error.response = SimpleNamespace(status_code=status)
    return error


def test_endpoint_eos_prevention_degrades_min_tokens_then_logit_bias_then_nothing(caplog):
    model = _RejectingEndpoint(responses=["Mara Holt built it."], llm=SimpleNamespace(endpoint_url="http://fake:1"),
                               rejects=("min_tokens", "logit_bias"))
    chat._endpoint_stage.pop("http://fake:1", None)
    chunks = list(chat.stream_chat(model, [HumanMessage("q")], 40, 0.0, eos_prevention=True, eos_token_ids=[2]))
    assert "".join(c.content for c in chunks) == "Mara Holt built it."
    sent = [call["kwargs"].get("extra_body") for call in model.calls]
    assert sent == [{"min_tokens": 38}, {"logit_bias": {"2": -100.0}}, None]
    assert chat._endpoint_stage["http://fake:1"] == 2  # remembered: the next call goes straight to 'none'
    model.calls.clear()
    list(chat.stream_chat(model, [HumanMessage("q")], 40, 0.0, eos_prevention=True, eos_token_ids=[2]))
    assert [call["kwargs"].get("extra_body") for call in model.calls] == [None]


def test_endpoint_that_accepts_min_tokens_gets_it_and_other_errors_are_not_swallowed():
    model = _RejectingEndpoint(responses=["ok."], llm=SimpleNamespace(endpoint_url="http://fake:2"))
    chat._endpoint_stage.pop("http://fake:2", None)
    list(chat.stream_chat(model, [HumanMessage("q")], 100, 0.0, eos_prevention=True))
    assert model.calls[0]["kwargs"]["extra_body"] == {"min_tokens": 95}

    class Down(_RejectingEndpoint):
        def _stream(self, *args, **kwargs):
            raise ConnectionError("connection refused")
            yield  # pragma: no cover

    with pytest.raises(ConnectionError):
        list(chat.stream_chat(Down(responses=["x"], llm=SimpleNamespace(endpoint_url="http://fake:3")),
                              [HumanMessage("q")], 100, 0.0, eos_prevention=True))
    assert chat._endpoint_stage.get("http://fake:3", 0) == 0


def test_eos_prevention_off_sends_no_extra_fields():
    model = _RejectingEndpoint(responses=["ok."], llm=SimpleNamespace(endpoint_url="http://fake:4"))
    list(chat.stream_chat(model, [HumanMessage("q")], 100, 0.0, eos_prevention=False))
    assert "extra_body" not in model.calls[0]["kwargs"]


def test_open_mode_without_passages_changes_strategy_on_every_retry(telemetry):
    fallback = "I don't know based on the provided documents."
    model = ScriptedChatModel(responses=[f"<answer>{fallback}</answer>"])  # abstains every time: never accepted
    graph = build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=[]),
                        tokenizer=WordTokenizer())
    result = ask(graph, "What is the boiling point of water at sea level?", grounding_mode="open")
    assert result["attempts"] == 3 and len(model.calls) == 3
    systems = [call["messages"][0].content for call in model.calls]
    assert len(set(systems)) == 3, systems  # three different prompts, not one prompt three times
    assert "previous answer was rejected" in systems[1] and "ONE short sentence" in systems[2]
    temperatures = [call["kwargs"]["temperature"] for call in model.calls]
    assert temperatures[0] > temperatures[1] == temperatures[2] == 0.0
    assert [r["strategy"] for r in telemetry()] == ["general", "general_strict", "general_concise"]
    assert result["answer"] == fallback  # a failed loop still ends in the fallback


def test_the_stream_retracts_a_rejected_attempt_and_a_dropped_continuation():
    model = ScriptedChatModel(responses=[
        "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>",
        "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>",
    ])
    custom = [payload for _, mode, payload in make_graph(model).stream(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {}}, stream_mode=["custom"], subgraphs=True)
        if mode == "custom"]
    kinds = [event["event"] for event in custom]
    discard = kinds.index("keel.discard")
    assert "Eiffel" in "".join(e["text"] for e in custom[:discard] if e["event"] == "keel.token")
    assert custom[discard]["attempt"] == 1 and "ungrounded" in custom[discard]["reason"]
    assert custom[discard + 1] == {"event": "keel.attempt", "attempt": 2, "strategy": "strict"}
    assert all(e["attempt"] == 2 for e in custom[discard + 1:])  # every event says which attempt it belongs to


def test_ordinary_retries_and_raw_layer_answers_log_below_warning(telemetry, caplog):
    """A retry and a plain-prose answer are the answer loop's normal work: the telemetry records
    them (parse_layer, accepted), and nothing reaches WARNING, which is kept for operators."""
    model = ScriptedChatModel(responses=[
        "The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.",
        "The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].",
    ])
    caplog.set_level(logging.DEBUG)
    result = ask(make_graph(model))
    assert result["status"] == "success" and result["attempts"] == 2
    records = telemetry()
    assert [(r["parse_layer"], r["accepted"]) for r in records] == [("raw", False), ("raw", True)]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
