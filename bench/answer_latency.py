"""Benchmark: Keel's answer against one plain chat completion on the same chat server.

    .venv/bin/python -m bench.answer_latency [--questions 17] [--seed 1] [--set FILE] [--out DIR]

A fresh user ingests a QA set's documents (default: the bundled help-desk set) with `keel ingest`'s
function, and the graph `keel ask` runs is built in-process and warmed with one question. Then, for
each sampled question, one new conversation each:

* **Keel**: the whole turn, streamed with ``stream_mode=["messages", "custom", "values"]``: its
  seconds; when the first progress reached the stream `keel chat` and the web page draw (what the
  search found, ``keel.progress``, or a draft word, ``keel.token``: "first visible"), when the first
  draft word did, and when the first chunk reached the ``messages`` stream an app embedding Keel
  shows; where the time went, from a callback on every node of the graph and of the answer loop
  (each node's own time, its children's taken out), the chat model's calls and the retrievals; what
  no node accounts for is the checkpoints (the conversation history), streaming and scheduling;
* **the naive baseline**: Keel's retriever for the question, then one chat completion of the same
  model on the same server with those passages and the question, capped at the length of Keel's
  answer in tokens (at least ``MIN_BASELINE_TOKENS``).

Prints p50 / p95 of both, their ratios against the targets (answer p50 <= 1.5x and p95 <= 2.5x the
baseline, first visible progress <= 1 s p50), and the breakdown; writes answer_latency.json and
answer_latency.png to --out. Uses the configured servers or the embedded ones under KEEL_HOME. Exits 1
when a target is missed, as the other benchmarks do. A turn that streamed no draft word (a refusal,
"I don't know" from a gate) has no first-visible time; the summary counts them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage

TARGET_P50_RATIO, TARGET_P95_RATIO, TARGET_FIRST_PROGRESS_S = 1.5, 2.5, 1.0
MIN_BASELINE_TOKENS = 16
PROMPT_MARGIN_TOKENS = 32  # the chat template's own tokens around the messages
WARM_UP_QUESTION = "What do these documents cover?"  # asked once before timing, never timed
BASELINE_SYSTEM = ("Answer the question from the passages below, in one or two sentences, citing them as "
                   "[Source N]. If they do not say, answer \"I don't know\".")
OUTSIDE_NODES = "outside nodes (checkpoints, streaming)"


class NodeTimer(BaseCallbackHandler):
    """Each graph node's own seconds (its child nodes' taken out), the chat model's calls and the
    retrievals, summed over the runs it saw. Node runs are the chain runs LangGraph names after their
    node (``metadata["langgraph_node"]``); the answer loop's nodes are among them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parent: dict = {}
        self._started: dict = {}
        self._children_s: dict = defaultdict(float)
        self.node_s: dict[str, float] = defaultdict(float)
        self.model_s = 0.0
        self.retrieval_s = 0.0

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, metadata=None, **kwargs):
        with self._lock:
            self._parent[run_id] = parent_run_id
            name = kwargs.get("name")
            if name and (metadata or {}).get("langgraph_node") == name:
                self._started[run_id] = (name, time.perf_counter())

    def on_chain_end(self, outputs, *, run_id, **kwargs):
        self._node_done(run_id)

    def on_chain_error(self, error, *, run_id, **kwargs):
        self._node_done(run_id)

    def _node_done(self, run_id) -> None:
        with self._lock:
            if run_id not in self._started:
                return
            name, started = self._started.pop(run_id)
            seconds = time.perf_counter() - started
            self.node_s[name] += seconds - self._children_s.pop(run_id, 0.0)
            ancestor = self._parent.get(run_id)
            while ancestor is not None and ancestor not in self._started:
                ancestor = self._parent.get(ancestor)
            if ancestor is not None:
                self._children_s[ancestor] += seconds

    def _start(self, kind: str, run_id) -> None:
        with self._lock:
            self._started[(kind, run_id)] = ("", time.perf_counter())

    def _stop(self, kind: str, run_id) -> None:
        """Add the seconds since ``_start(kind, run_id)`` to ``<kind>_s`` (nothing for a run never started)."""
        with self._lock:
            started = self._started.pop((kind, run_id), None)
            if started:
                setattr(self, f"{kind}_s", getattr(self, f"{kind}_s") + time.perf_counter() - started[1])

    def on_chat_model_start(self, serialized, messages, *, run_id, **kwargs):
        self._start("model", run_id)

    def on_llm_start(self, serialized, prompts, *, run_id, **kwargs):
        self._start("model", run_id)

    def on_llm_end(self, response, *, run_id, **kwargs):
        self._stop("model", run_id)

    on_llm_error = on_llm_end

    def on_retriever_start(self, serialized, query, *, run_id, **kwargs):
        self._start("retrieval", run_id)

    def on_retriever_end(self, documents, *, run_id, **kwargs):
        self._stop("retrieval", run_id)

    on_retriever_error = on_retriever_end


def ask_keel(graph, question: str, run_config: dict) -> dict:
    """One turn, streamed as `keel chat` and an embedding app see it, saved once at its end as `keel
    ask`, `keel chat` and `keel serve` save it."""
    from keel.graph.chat_graph import whole_turn_saves

    timer = NodeTimer()
    config = {**run_config, "callbacks": [timer]}
    started = time.perf_counter()
    first_token = first_message = first_progress = None
    final: dict = {}
    for mode, payload in graph.stream({"messages": [HumanMessage(question)]}, config,
                                      stream_mode=["messages", "custom", "values"], **whole_turn_saves(graph)):
        now = time.perf_counter() - started
        if mode == "custom" and isinstance(payload, dict) and payload.get("event") in ("keel.progress", "keel.token"):
            first_progress = first_progress if first_progress is not None else now
        if mode == "custom" and isinstance(payload, dict) and payload.get("event") == "keel.token" and payload.get("text"):
            first_token = first_token if first_token is not None else now
        elif mode == "messages" and isinstance(payload[0], AIMessageChunk) and payload[0].content:
            first_message = first_message if first_message is not None else now
        elif mode == "values":
            final = payload
    total = time.perf_counter() - started
    nodes = dict(timer.node_s)
    return {"seconds": total, "first_progress_s": first_progress, "first_draft_token_s": first_token,
            "first_messages_chunk_s": first_message,
            "answer": final.get("answer") or "", "status": final.get("status") or "", "attempts": final.get("attempts") or 0,
            "nodes_s": nodes, "model_s": timer.model_s, "retrieval_s": timer.retrieval_s,
            "outside_nodes_s": max(0.0, total - sum(nodes.values()))}


def ask_baseline(components, cfg, question: str, max_tokens: int) -> dict:
    """Retrieval, then one chat completion with the passages that fit the model's window beside the
    answer, capped at ``max_tokens``."""
    from keel.core.text import content_text
    from keel.models.chat import stream_chat

    started = time.perf_counter()
    asked = f"Question: {question}"
    room = (components.fitted(cfg).llm_context_window - max_tokens - PROMPT_MARGIN_TOKENS
            - components.count_tokens(cfg, BASELINE_SYSTEM) - components.count_tokens(cfg, asked))
    kept: list[str] = []
    for passage in components.retriever_for(cfg).invoke(question):
        block = f"[Source {len(kept) + 1}] {passage.page_content}"
        room -= components.count_tokens(cfg, block) + 2  # the blank line between blocks
        if room < 0:
            break
        kept.append(block)
    messages = [SystemMessage(BASELINE_SYSTEM), HumanMessage("\n\n".join([*kept, asked]))]
    first, text = None, []
    for chunk in stream_chat(components.chat(cfg), messages, max_tokens, cfg.temperature):
        piece = content_text(chunk.content)
        if piece and first is None:
            first = time.perf_counter() - started
        text.append(piece)
    return {"seconds": time.perf_counter() - started, "first_token_s": first, "answer": "".join(text),
            "max_tokens": max_tokens, "passages": len(kept)}


def percentile(values: list[float | None], share: float) -> float:
    """Linear-interpolated percentile of the values that are not None (NaN when none is)."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return float("nan")
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(rows: list[dict]) -> dict:
    keel = [r["keel"]["seconds"] for r in rows]
    base = [r["baseline"]["seconds"] for r in rows]
    nodes: dict[str, float] = defaultdict(float)
    for row in rows:
        for name, seconds in row["keel"]["nodes_s"].items():
            nodes[name] += seconds / len(rows)
    summary = {
        "questions": len(rows),
        "keel_p50_s": round(percentile(keel, 0.5), 3), "keel_p95_s": round(percentile(keel, 0.95), 3),
        "baseline_p50_s": round(percentile(base, 0.5), 3), "baseline_p95_s": round(percentile(base, 0.95), 3),
        "first_progress_p50_s": round(percentile([r["keel"]["first_progress_s"] for r in rows], 0.5), 3),
        "first_draft_token_p50_s": round(percentile([r["keel"]["first_draft_token_s"] for r in rows], 0.5), 3),
        "first_messages_chunk_p50_s": round(percentile([r["keel"]["first_messages_chunk_s"] for r in rows], 0.5), 3),
        "baseline_first_token_p50_s": round(percentile([r["baseline"]["first_token_s"] for r in rows], 0.5), 3),
        "turns_without_draft_token": sum(r["keel"]["first_draft_token_s"] is None for r in rows),
        "mean_attempts": round(statistics.mean(r["keel"]["attempts"] for r in rows), 2),
        "breakdown_mean_s": {
            **{name: round(s, 3) for name, s in sorted(nodes.items(), key=lambda kv: -kv[1])},
            OUTSIDE_NODES: round(statistics.mean(r["keel"]["outside_nodes_s"] for r in rows), 3)},
        "model_calls_mean_s": round(statistics.mean(r["keel"]["model_s"] for r in rows), 3),
        "retrieval_mean_s": round(statistics.mean(r["keel"]["retrieval_s"] for r in rows), 3),
        "keel_model_s_over_baseline_s": round(statistics.mean(r["keel"]["model_s"] for r in rows)
                                              / max(1e-9, statistics.mean(base)), 3),
    }
    summary["p50_ratio"] = round(summary["keel_p50_s"] / summary["baseline_p50_s"], 2)
    summary["p95_ratio"] = round(summary["keel_p95_s"] / summary["baseline_p95_s"], 2)
    return summary


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    labels = ["p50", "p95", "first visible"]
    keel = [summary["keel_p50_s"], summary["keel_p95_s"], summary["first_progress_p50_s"]]
    base = [summary["baseline_p50_s"], summary["baseline_p95_s"], summary["baseline_first_token_p50_s"]]
    xs = range(len(labels))
    left.bar([x - 0.2 for x in xs], keel, 0.4, label="Keel", color="#3b7dd8")
    left.bar([x + 0.2 for x in xs], base, 0.4, label="one completion", color="#999999")
    left.set_xticks(list(xs))
    left.set_xticklabels(labels)
    left.set_ylabel("seconds")
    left.set_title(f"{summary['questions']} questions: p50 x{summary['p50_ratio']}, p95 x{summary['p95_ratio']}")
    left.legend()
    breakdown = summary["breakdown_mean_s"]
    right.barh(list(breakdown), list(breakdown.values()), color="#3b7dd8")
    right.invert_yaxis()
    right.set_xlabel("mean seconds per question (own time)")
    right.set_title("where Keel's time goes")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=None, help="a QA set file (default: the bundled help-desk set)")
    parser.add_argument("--questions", type=int, default=17)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)

    from tqdm import tqdm

    from keel.cli import running
    from keel.components import Components
    from keel.core.configuration import Configuration
    from keel.evals import qa

    qa_set = qa.load_qa_set(args.set or qa.BUNDLED_HELPDESK)
    cfg = Configuration(grounding_mode="strict", user_id=f"bench-latency-{uuid.uuid4().hex[:8]}")
    qa.ingest_set(qa_set, lambda paths: running.ingest_paths(paths, cfg, None, progress=False), cfg)
    components = Components()
    graph = running.graph_with_history(cfg)
    questions = qa.sample_questions(qa_set.questions, args.questions, args.seed)
    ask_keel(graph, WARM_UP_QUESTION, running.run_config(cfg, uuid.uuid4().hex))  # models loaded, caches warm
    ask_baseline(components, cfg, WARM_UP_QUESTION, MIN_BASELINE_TOKENS)
    rows = []
    for question in tqdm(questions, desc="answer latency", unit="q", file=sys.stderr):
        keel = ask_keel(graph, question.question, running.run_config(cfg, uuid.uuid4().hex))
        tokens = components.count_tokens(cfg, keel["answer"])
        baseline = ask_baseline(components, cfg, question.question, max(MIN_BASELINE_TOKENS, tokens))
        rows.append({"question": question.question, "answer_tokens": tokens, "keel": keel, "baseline": baseline})
    summary = summarize(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "answer_latency.json").write_text(json.dumps({**summary, "set": str(qa_set.path), "rows": rows},
                                                             indent=2, ensure_ascii=False, default=str))
    plot(summary, args.out / "answer_latency.png")
    print(json.dumps(summary, indent=2))
    met = (summary["p50_ratio"] <= TARGET_P50_RATIO, summary["p95_ratio"] <= TARGET_P95_RATIO,
           summary["first_progress_p50_s"] <= TARGET_FIRST_PROGRESS_S)
    print(f"targets: p50 <= {TARGET_P50_RATIO}x {'met' if met[0] else 'missed'}, p95 <= {TARGET_P95_RATIO}x "
          f"{'met' if met[1] else 'missed'}, first visible <= {TARGET_FIRST_PROGRESS_S} s "
          f"{'met' if met[2] else 'missed'}", file=sys.stderr)
    print(f"wrote {args.out / 'answer_latency.json'} and {args.out / 'answer_latency.png'}", file=sys.stderr)
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
