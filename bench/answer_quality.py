"""Answer-loop benchmark: quality with early-EOS prevention off (the baseline) and on,
leaks, clean responses, attempts, continuations, and the validation overhead.

    .venv/bin/python -m bench.answer_quality                       # 50 seeded dev questions, both modes
    .venv/bin/python -m bench.answer_quality --limit 20 --modes off

The SQuAD 2.0 dev sample (../shared/data/qa/squad2-dev-normans-complexity.json) is ingested for a
fresh user (one document per article, a page per paragraph; removed at the end), and every sampled
question is asked through the whole graph in strict grounding mode, streamed, one new conversation
each. Per mode it reports:

* answer quality: answerable_correct (success whose answer contains a gold answer), abstention on
  unanswerable questions, false abstention, success rate, mean quality score of successes;
* leak_rate: answers (and, separately, streamed text) that show a reasoning marker (target 0);
* clean_response_rate: model attempts whose parsed answer had no artifact or duplicate-sentence
  deduction (the answer the user should see, nothing leaked or repeated); first_attempt_accept_rate;
* mean attempts and continuations per question;
* validation overhead: (checks during generation + validate_answer) / model generation time,
  from the per-attempt telemetry records (target <= 10%).

The eos-on mode is reported as a ratio against the eos-off baseline measured in the same run.
Uses the configured servers (REDIS_URL, KEEL_LLM_ENDPOINT) or the embedded ones under KEEL_HOME.
Writes answer_quality.json and answer_quality.png to --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from pathlib import Path
from statistics import mean

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "qa" / "squad2-dev-normans-complexity.json"
MODES = {"off": False, "on": True}


class TelemetryCollector(logging.Handler):
    """Keeps the answer loop's per-attempt telemetry records (logger keel.answer)."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.records: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "keel_telemetry"):
            self.records.append(record.keel_telemetry)


def ask_streamed(graph, question: str, configurable: dict) -> tuple[dict, str]:
    final, streamed = {}, []
    for namespace, mode, payload in graph.stream(
        {"messages": [("human", question)]}, {"configurable": configurable},
        stream_mode=["custom", "values"], subgraphs=True,
    ):
        if mode == "custom" and payload.get("event") == "keel.token":
            streamed.append(payload["text"])
        elif mode == "values" and not namespace:
            final = payload
    return final, "".join(streamed)


def run_mode(graph, questions, user_id: str, eos_prevention: bool, extra: dict, progress: bool,
             partial: Path | None = None) -> dict:
    from keel.checks.reasoning_filter import find_leaks
    from keel.evals.squad2 import contains_gold

    collector = TelemetryCollector()
    logger = logging.getLogger("keel.answer")
    logger.addHandler(collector)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the records feed the collector, not the console
    rows = []
    iterator = questions
    if progress:
        from tqdm import tqdm

        iterator = tqdm(questions, desc=f"eos {'on' if eos_prevention else 'off'}", unit="q", file=sys.stderr)
    try:
        for question in iterator:
            first = len(collector.records)
            configurable = {"user_id": user_id, "thread_id": uuid.uuid4().hex, "grounding_mode": "strict",
                            "eos_prevention": eos_prevention, **extra}
            started = time.perf_counter()
            final, streamed = ask_streamed(graph, question.question, configurable)
            answer, status = final.get("answer", ""), final.get("status", "error")
            rows.append({
                "qid": question.qid, "question": question.question, "impossible": question.impossible,
                "answer": answer, "status": status, "attempts": int(final.get("attempts") or 0),
                "continuations": int(final.get("continuations") or 0), "quality": float(final.get("quality") or 0),
                "correct": status == "success" and not question.impossible and contains_gold(answer, question.answers),
                "leaks": find_leaks(answer), "stream_leaks": find_leaks(streamed),
                "latency_s": round(time.perf_counter() - started, 3), "attempt_records": collector.records[first:],
            })
            if partial is not None:  # a run cut short on a busy machine still leaves its numbers so far
                partial.parent.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps(summarize(rows), indent=2, ensure_ascii=False))
    finally:
        logger.removeHandler(collector)
        logger.propagate = True
    return summarize(rows)


def _rate(rows, predicate) -> float:
    return round(sum(1 for r in rows if predicate(r)) / len(rows), 4) if rows else 0.0


def summarize(rows: list[dict]) -> dict:
    answerable = [r for r in rows if not r["impossible"]]
    unanswerable = [r for r in rows if r["impossible"]]
    successes = [r for r in rows if r["status"] == "success"]
    attempts = [a for r in rows for a in r["attempt_records"]]
    model_attempts = [a for a in attempts if a.get("strategy") != "extractive" and not a.get("error")]
    generation = sum(a["timings"].get("generation_s", 0.0) for a in attempts)
    validation = sum(a["timings"].get("checks_s", 0.0) + a["timings"].get("validation_s", 0.0) for a in attempts)
    firsts = [a for a in attempts if a.get("attempt") == 1]
    return {
        "questions": len(rows), "answerable": len(answerable), "unanswerable": len(unanswerable),
        "answerable_correct": _rate(answerable, lambda r: r["correct"]),
        "abstention_rate": _rate(unanswerable, lambda r: r["status"] != "success"),
        "false_abstention_rate": _rate(answerable, lambda r: r["status"] != "success"),
        "success_rate": _rate(rows, lambda r: r["status"] == "success"),
        "mean_quality_of_successes": round(mean(r["quality"] for r in successes), 4) if successes else 0.0,
        "leak_rate": _rate(rows, lambda r: bool(r["leaks"])),
        "stream_leak_rate": _rate(rows, lambda r: bool(r["stream_leaks"])),
        "clean_response_rate": _rate(model_attempts, lambda a: not {"artifacts", "duplicate_sentences"} & set(a["deductions"])),
        "first_attempt_accept_rate": _rate(firsts, lambda a: a.get("accepted")),
        "mean_attempts": round(mean(r["attempts"] for r in rows), 3) if rows else 0.0,
        "mean_continuations": round(mean(r["continuations"] for r in rows), 3) if rows else 0.0,
        "mean_completion_tokens_per_model_attempt": round(
            mean(a["tokens"].get("completion_tokens", 0) for a in model_attempts), 1) if model_attempts else 0.0,
        "generation_s": round(generation, 2), "validation_s": round(validation, 2),
        "validation_overhead_ratio": round(validation / generation, 4) if generation else 0.0,
        "mean_latency_s": round(mean(r["latency_s"] for r in rows), 2) if rows else 0.0,
        "parse_layers": {layer: sum(1 for a in model_attempts if a.get("parse_layer") == layer)
                         for layer in sorted({a.get("parse_layer") for a in model_attempts})},
        "status_counts": {s: sum(1 for r in rows if r["status"] == s) for s in sorted({r["status"] for r in rows})},
        "rows": rows,
    }


COMPARED = ("answerable_correct", "abstention_rate", "false_abstention_rate", "success_rate", "leak_rate",
            "clean_response_rate", "first_attempt_accept_rate", "mean_attempts", "mean_continuations",
            "validation_overhead_ratio", "mean_latency_s")


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = ["answerable_correct", "abstention_rate", "false_abstention_rate", "success_rate", "leak_rate",
             "clean_response_rate", "first_attempt_accept_rate", "validation_overhead_ratio"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    width = 0.8 / max(1, len(results))
    for index, (mode, result) in enumerate(results.items()):
        xs = [i + index * width for i in range(len(rates))]
        left.bar(xs, [result[k] for k in rates], width, label=f"eos prevention {mode}")
        right.bar([index], [result["mean_latency_s"]], 0.6, label=f"eos {mode}")
    left.set_xticks([i + width * (len(results) - 1) / 2 for i in range(len(rates))])
    left.set_xticklabels([r.replace("_", "\n") for r in rates], fontsize=7)
    left.set_ylim(0, 1)
    left.set_title(f"Answer loop on the SQuAD 2.0 dev sample ({next(iter(results.values()))['questions']} questions)")
    left.legend()
    right.set_xticks(range(len(results)))
    right.set_xticklabels([f"eos {m}" for m in results])
    right.set_title("mean latency (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--modes", default="off,on", help="comma list of eos prevention modes: off,on")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"bench.answer_quality: no such data file: {args.data}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        print(f"bench.answer_quality: unknown mode(s) {unknown}; use off and/or on", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    for name in ("keel.parser", "keel.answer", "httpx", "sentence_transformers", "transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)

    from keel.evals.squad2 import ingest_articles, load_squad, sample_questions
    from keel.graph import build_graph
    from keel.core.configuration import Configuration
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store

    articles, questions = load_squad(args.data)
    chosen = sample_questions(questions, args.limit, args.seed)
    titles = {q.article for q in chosen}
    user_id = f"bench-answer-{uuid.uuid4().hex[:8]}"
    cfg = Configuration(user_id=user_id)
    store = get_vector_store(cfg, get_embeddings(cfg))
    doc_ids = ingest_articles([a for a in articles if a.title in titles], store, cfg, user_id)
    graph = build_graph()
    extra = {"max_new_tokens": args.max_new_tokens} if args.max_new_tokens else {}
    results: dict[str, dict] = {}
    try:
        for mode in modes:
            results[mode] = run_mode(graph, chosen, user_id, MODES[mode], extra, progress=True,
                                     partial=args.out / f"answer_quality.partial-{mode}.json")
    finally:
        for doc_id in doc_ids.values():
            store.delete_document(user_id, doc_id)
    report(results, args, cfg)
    return 0


def report(results: dict[str, dict], args, cfg) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "answer_quality.json").write_text(json.dumps(
        {"data": str(args.data), "limit": args.limit, "seed": args.seed,
         "max_new_tokens": args.max_new_tokens or cfg.max_new_tokens, "results": results}, indent=2, ensure_ascii=False))
    plot(results, args.out / "answer_quality.png")
    header = f"{'metric':34}" + "".join(f"{'eos ' + m:>14}" for m in results)
    baseline = results.get("off")
    if baseline and len(results) > 1:
        header += f"{'on/off':>10}"
    print(header)
    for key in COMPARED:
        line = f"{key:34}" + "".join(f"{r[key]:>14}" for r in results.values())
        if baseline and "on" in results and len(results) > 1:
            ratio = results["on"][key] / baseline[key] if baseline[key] else float("nan")
            line += f"{ratio:>10.2f}"
        print(line)
    for mode, result in results.items():
        print(f"eos {mode}: statuses {result['status_counts']}, parse layers {result['parse_layers']}, "
              f"generation {result['generation_s']}s, validation {result['validation_s']}s")
    print(f"wrote {args.out / 'answer_quality.json'} and {args.out / 'answer_quality.png'}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
