"""The chat client on the real llama.cpp server (SmolLM2), as the graph reaches it: usage counts,
log-probabilities, stop sequences, streaming, batching and async, of one call and of the whole graph."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage

from keel.models.chat import get_chat_model
from tests.fakes import StaticRetriever, passage_doc

FACTS = ["The Varden lighthouse was built in 1874 by the engineer Mara Holt.",
         "The ferry to the mainland leaves every morning at 7 am."]


@pytest.fixture(scope="module")
def chat(keel_config, llm_endpoint):
    return get_chat_model(keel_config)


def test_a_call_reports_its_usage_and_log_probabilities(chat):
    reply = chat.invoke("Name a colour.", max_tokens=12, temperature=0.0, logprobs=True, top_logprobs=2)
    usage = reply.usage_metadata
    assert usage["input_tokens"] > 5 and 0 < usage["output_tokens"] <= 12
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    tokens = reply.response_metadata["logprobs"]["content"]
    assert len(tokens) == usage["output_tokens"] and "".join(t["token"] for t in tokens).strip() == reply.content.strip()
    assert all(t["logprob"] <= 0 and len(t["top_logprobs"]) == 2 for t in tokens)
    assert all(max(alt["logprob"] for alt in t["top_logprobs"]) >= t["logprob"] - 1e-6 for t in tokens)


def test_a_stop_sequence_ends_the_answer_before_it(chat):
    prompt = "Describe the sea in three sentences."
    free = chat.invoke(prompt, max_tokens=64, temperature=0.0, seed=7)
    assert "." in free.content.strip()[:-1]  # without the stop it writes more than one sentence
    stopped = chat.invoke(prompt, max_tokens=64, temperature=0.0, seed=7, stop=["."])
    assert "." not in stopped.content and stopped.response_metadata["finish_reason"] == "stop"
    assert 0 < len(stopped.content) < len(free.content)


def test_streaming_batching_and_async_answer_the_same_question_alike(chat):
    # The server's prompt cache can change the last digits of a long answer's numbers, so the
    # answers are compared on their start, which the fixed seed makes the same.
    prompt, options = "Name three fruits.", {"max_tokens": 16, "temperature": 0.0, "seed": 7}
    whole = chat.invoke(prompt, **options).content
    chunks = [chunk.content for chunk in chat.stream(prompt, **options)]
    batched = [m.content for m in chat.batch([prompt, "Name three colours."], **options)]

    async def run():
        called = await chat.ainvoke(prompt, **options)
        pieces = [chunk.content async for chunk in chat.astream(prompt, **options)]
        return called.content, pieces

    called, pieces = asyncio.run(run())
    assert len(chunks) > 3 and len(pieces) > 3  # streamed token by token, sync and async
    answers = [whole, "".join(chunks), batched[0], called, "".join(pieces)]
    assert all(answer[:8] == whole[:8] and len(answer) > 8 for answer in answers), answers
    assert batched[1][:8] != whole[:8]  # the batch answered each of its own questions


def test_the_whole_graph_runs_async_and_streams_its_events(keel_config, llm_endpoint):
    from keel.chains.prompts import BASE_SYSTEM_PROMPT
    from keel.graph import build_graph

    graph = build_graph(retriever=StaticRetriever(documents=[passage_doc(t, page=n) for n, t in enumerate(FACTS, 1)]))
    question = {"messages": [HumanMessage("Who built the Varden lighthouse?")]}
    config = {"configurable": {"max_new_tokens": 64}}

    async def run():
        result = await graph.ainvoke(question, config)
        kinds, names, final, seen = set(), set(), None, []
        async for event in graph.astream_events(question, config, version="v2"):
            kinds.add(event["event"])
            names.add(event["name"])
            seen.append(repr(event))
            if event["event"] == "on_chain_end" and not event["parent_ids"]:  # the whole graph's run
                final = event["data"]["output"]
        parts = [mode async for mode in graph.astream(question, config, stream_mode="updates")]
        return result, kinds, final, parts, names, seen

    result, kinds, final, parts, names, seen = asyncio.run(run())
    # a client sees the graph's run and the relayed answer: no node, no prompt, no draft, no model name
    assert names == {"keel", "keel_answer"}
    assert not [event for event in seen if BASE_SYSTEM_PROMPT[:40] in event or "generate_answer" in event]
    assert result["status"] in {"success", "low_confidence", "insufficient_context", "hallucination_detected"}
    assert {"on_chain_start", "on_chain_end", "on_chat_model_stream"} <= kinds  # the real model streamed tokens
    assert final["status"] == result["status"] and final["answer"] == result["answer"]  # fixed seed: same turn
    assert any("route_query" in part for part in parts) and any("guardrails" in part for part in parts)
