"""The answer-latency benchmark's accounting: each node's own time, children taken out, and the
summary's ratios against the one-completion baseline."""

from __future__ import annotations

import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from bench.answer_latency import OUTSIDE_NODES, NodeTimer, summarize


class _State(TypedDict, total=False):
    steps: int


def _sleeper(seconds: float):
    def node(state: _State) -> _State:
        time.sleep(seconds)
        return {"steps": state.get("steps", 0) + 1}
    return node


def _graph():
    inner = StateGraph(_State)
    inner.add_node("draft", _sleeper(0.2))
    inner.add_edge(START, "draft")
    inner.add_edge("draft", END)
    loop = inner.compile()

    def answering(state: _State) -> _State:
        time.sleep(0.05)
        return loop.invoke(state)

    outer = StateGraph(_State)
    outer.add_node("check", _sleeper(0.1))
    outer.add_node("answering", answering)
    outer.add_edge(START, "check")
    outer.add_edge("check", "answering")
    outer.add_edge("answering", END)
    return outer.compile()


def test_each_node_is_timed_by_its_own_work_not_its_childrens():
    timer = NodeTimer()
    _graph().invoke({"steps": 0}, {"callbacks": [timer]})
    assert set(timer.node_s) == {"check", "answering", "draft"}
    assert 0.09 <= timer.node_s["check"] < 0.18
    assert 0.19 <= timer.node_s["draft"] < 0.3
    # The answering node waited 0.25 s in all, 0.2 of it in its child: its own time is the rest.
    assert 0.04 <= timer.node_s["answering"] < 0.12


def _row(keel_s: float, baseline_s: float, first: float | None, progress: float | None = 0.3) -> dict:
    return {"answer_tokens": 20,
            "keel": {"seconds": keel_s, "first_progress_s": progress, "first_draft_token_s": first,
                     "first_messages_chunk_s": first,
                     "attempts": 1, "nodes_s": {"generate_answer": keel_s - 1, "guardrails": 0.5},
                     "model_s": keel_s - 1.5, "retrieval_s": 0.1, "outside_nodes_s": 0.5},
            "baseline": {"seconds": baseline_s, "first_token_s": 0.4}}


def test_the_summary_divides_keel_by_the_baseline_of_the_same_run():
    summary = summarize([_row(6.0, 3.0, 0.8), _row(4.0, 2.0, 1.2, 0.5), _row(12.0, 3.0, 0.9), _row(5.0, 2.5, None)])
    assert summary["keel_p50_s"] == 5.5 and summary["baseline_p50_s"] == 2.75 and summary["p50_ratio"] == 2.0
    assert summary["keel_p95_s"] == 11.1 and summary["baseline_p95_s"] == 3.0 and summary["p95_ratio"] == 3.7
    # a turn that streamed no draft word has no first-visible time: counted, not read as zero
    assert summary["first_draft_token_p50_s"] == 0.9 and summary["turns_without_draft_token"] == 1
    assert summary["first_progress_p50_s"] == 0.3  # what the search found, before any draft word
    assert list(summary["breakdown_mean_s"])[0] == "generate_answer"  # the largest first
    assert summary["breakdown_mean_s"][OUTSIDE_NODES] == 0.5
