"""A compound question's sub-questions from a chat model that takes tools, checked at a loopback
server that speaks the OpenAI-compatible API: what is asked of it, what comes back, and the rules'
split whenever the model's answer cannot be used."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever

from keel.chains.question_split import plan_subquestions, uses_model
from keel.components import Components
from keel.core.configuration import Configuration
from keel.retrievers.fanout import search_scopes, split_subquestions
from tests import openai_loopback

TOOL_MODEL = "qwen2.5-coder-0.5b"  # a pool model whose chat template takes tools
COMPOUND = "How much does the Vela V25 weigh and what does it cost?"


@pytest.fixture
def loopback():
    state, server = openai_loopback.start("vllm")
    yield state
    server.shutdown()
    server.server_close()


def _cfg(loopback, **settings) -> Configuration:
    settings = {"chat_runtime": "endpoint", "subquestion_splitter": "auto", "chat_model": TOOL_MODEL, **settings}
    return Configuration(llm_endpoint=loopback.url, **settings)


def test_a_tool_model_names_each_part_in_full(loopback):
    parts = ["What does the Vela V25 weigh?", "What does the Vela V25 cost?"]
    loopback.tool_arguments = {"questions": parts}
    cfg = _cfg(loopback)
    subquestions, usage = plan_subquestions(COMPOUND, cfg, Components())
    assert subquestions == parts
    assert split_subquestions(COMPOUND)[1] == "what does it cost?"  # what the rules would have searched
    written = len(loopback.answers[0].split())  # the loopback's own counts
    assert usage == {"prompt_tokens": 40, "completion_tokens": written, "total_tokens": 40 + written}
    [sent] = loopback.chat_requests()
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "SubQuestions"}}
    assert sent["tools"][0]["function"]["parameters"]["properties"]["questions"]["type"] == "array"
    assert sent["max_tokens"] == cfg.subquestion_max_tokens and sent["temperature"] == 0.0
    assert f"At most {cfg.max_subquestions}" in sent["messages"][0]["content"]
    assert sent["messages"][-1] == {"role": "user", "content": COMPOUND}


def test_a_question_without_a_conjunction_is_not_sent_to_the_model(loopback):
    question = "When is phone support in the Netherlands open on Saturdays?"
    assert plan_subquestions(question, _cfg(loopback), Components()) == ([question], None)
    assert loopback.chat_requests() == []


def test_one_part_keeps_the_users_own_words(loopback):
    loopback.tool_arguments = {"questions": ["What are the fees and the opening hours?"]}
    question = "What are the fees and opening hours?"
    assert plan_subquestions(question, _cfg(loopback), Components())[0] == [question]
    assert len(loopback.chat_requests()) == 1


@pytest.mark.parametrize("arguments", [
    {"questions": "not a list"},
    {"questions": []},
    {"questions": ["What does the Vela V25 weigh?", "  "]},
    {"questions": ["What does the Vela V25 weigh?", "x " * 200]},
    {"parts": ["a", "b"]},
])
def test_a_reply_that_does_not_fit_leaves_the_rules_split(loopback, arguments):
    loopback.tool_arguments = arguments
    subquestions, _ = plan_subquestions(COMPOUND, _cfg(loopback), Components())
    assert subquestions == split_subquestions(COMPOUND)
    assert len(loopback.chat_requests()) == 1


def test_a_failing_model_leaves_the_rules_split(loopback):
    loopback.error = (500, {"object": "error", "message": "out of memory", "type": "InternalServerError"})
    subquestions, usage = plan_subquestions(COMPOUND, _cfg(loopback), Components())
    assert (subquestions, usage) == (split_subquestions(COMPOUND), None)


def test_more_parts_than_allowed_are_searched_together_at_the_end(loopback):
    loopback.tool_arguments = {"questions": ["Price of the V20?", "Price of the V25?", "Weight of the V20?"]}
    subquestions, _ = plan_subquestions("Price and weight of the V20, and the V25's price?",
                                        _cfg(loopback, max_subquestions=2), Components())
    assert subquestions == ["Price of the V20?", "Price of the V25? Weight of the V20?"]


def test_who_splits(loopback):
    assert uses_model(_cfg(loopback), Components())  # auto: a pool model that takes tools, over an endpoint
    assert not uses_model(_cfg(loopback, chat_model="smollm2-135m"), Components())  # its template takes none
    assert not uses_model(_cfg(loopback, subquestion_splitter="rules"), Components())
    default = Configuration(chat_runtime="endpoint", llm_endpoint=loopback.url)
    assert not uses_model(default, Components())  # the default model, SmolLM2, takes no tools: the rules split
    assert uses_model(dataclasses.replace(default, chat_model=TOOL_MODEL), Components())  # auto by default
    assert not uses_model(_cfg(loopback), Components(chat_model=FakeListChatModel(responses=["x"])))
    assert uses_model(_cfg(loopback, subquestion_splitter="model"), Components(chat_model=FakeListChatModel(responses=["x"])))
    assert not uses_model(_cfg(loopback, chat_runtime="transformers"), Components())
    plan_subquestions(COMPOUND, _cfg(loopback, chat_model="smollm2-135m"), Components())
    assert loopback.chat_requests() == []  # the rules split it, with no model call


class _Recorder(BaseRetriever):
    queries: list = []

    def _get_relevant_documents(self, query, *, run_manager):
        self.queries.append(query)
        return [Document(page_content=f"about {query}", metadata={"doc_id": "d", "score": 0.9})]


def test_the_search_runs_the_given_subquestions():
    recorder = _Recorder(queries=[])
    parts = ["What does the Vela V25 weigh?", "What does the Vela V25 cost?"]
    [found] = search_scopes(COMPOUND, lambda cfg, scope: recorder, Configuration(), [None], subquestions=parts)
    assert sorted(recorder.queries) == sorted(parts)
    assert {d.page_content for d in found} == {f"about {p}" for p in parts}


def test_an_unreachable_model_server_leaves_the_rules_split_and_the_answer_node_reports_it():
    cfg = Configuration(chat_runtime="endpoint", llm_endpoint="http://127.0.0.1:9", chat_model=TOOL_MODEL,
                        subquestion_splitter="auto", connect_timeout_s=0.5)
    assert plan_subquestions(COMPOUND, cfg, Components()) == (split_subquestions(COMPOUND), None)


def test_a_request_that_is_over_asks_no_split(loopback):
    from keel.models import cancellation

    token = cancellation.CancelToken()
    token.cancel()
    reset = cancellation.bind(token)
    try:
        with pytest.raises(cancellation.GenerationCancelled):
            plan_subquestions(COMPOUND, _cfg(loopback), Components())
    finally:
        cancellation.unbind(reset)
    assert loopback.chat_requests() == []


def test_a_live_request_counts_the_split_while_it_runs(loopback):
    from keel.models import cancellation

    token = cancellation.CancelToken()
    seen = []
    original = token.model_call

    def counted():
        seen.append("started")
        return original()

    token.model_call = counted
    reset = cancellation.bind(token)
    try:
        loopback.tool_arguments = {"questions": ["What does the Vela V25 weigh?", "What does the Vela V25 cost?"]}
        plan_subquestions(COMPOUND, _cfg(loopback), Components())
    finally:
        cancellation.unbind(reset)
    assert seen == ["started"] and token.running == 0


def test_a_reply_that_does_not_fit_still_counts_its_tokens(loopback):
    loopback.tool_arguments = {"questions": "not a list"}
    subquestions, usage = plan_subquestions(COMPOUND, _cfg(loopback), Components())
    assert subquestions == split_subquestions(COMPOUND) and usage["prompt_tokens"] == 40


def test_one_sub_question_at_most_asks_no_model(loopback):
    cfg = _cfg(loopback, subquestion_splitter="model", max_subquestions=1)
    assert plan_subquestions(COMPOUND, cfg, Components()) == ([COMPOUND], None)
    assert loopback.chat_requests() == []


def test_the_splits_tokens_are_in_the_turns_usage_when_the_answer_fails():
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda

    from keel.graph import build_graph
    from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

    class SplitsThenBreaks(FakeListChatModel):
        def bind_tools(self, tools, tool_choice=None, **kwargs):
            call = {"name": "SubQuestions", "args": {"questions": ["Who built it?", "When was it painted?"]}, "id": "1"}
            usage = {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42}
            return RunnableLambda(lambda messages: AIMessage("", tool_calls=[call], usage_metadata=usage))

        def _stream(self, *args, **kwargs):
            raise ConnectionError("endpoint refused")

    graph = build_graph(chat_model=SplitsThenBreaks(responses=["x"]), embeddings=BagOfWordsEmbeddings(),
                        retriever=StaticRetriever(documents=[passage_doc("The Varden lighthouse was built in 1874.")]),
                        tokenizer=WordTokenizer())
    result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse and when was it painted?")]},
                          {"configurable": {"subquestion_splitter": "model"}})
    assert result["status"] == "error"
    assert result["usage"]["prompt_tokens"] >= 30 and result["usage"]["completion_tokens"] >= 12
