"""Benchmark: the chat model pool on the SQuAD 2.0 dev sample, each model alone and the escalation
policies, on the same questions, asked as ``keel ask`` asks (``keel eval squad2``).

Each policy is one ``keel eval squad2 FILE --limit N --sample-seed S --set ...`` run, one after the
other (never two at once on a small machine: llama.cpp's threads would fight for the cores and the
latencies mean nothing); ``--from DIR`` reads runs already made (DIR/<policy>.json). Prints the
rates, the mean latency and its ratio to the baseline (the embedded default, smollm2-135m, measured
in the same batch), and plots them (--plot).

Run: ``KEEL_HOME=... .venv/bin/python -m bench.model_pool ../shared/data/qa/squad2-dev-normans-complexity.json
--out /tmp/pool-eval --plot /tmp/pool-eval/pool.png``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BASELINE = "smollm2_idle"
POLICIES = {  # name -> the eval's --set arguments
    "smollm2": ["chat_model=smollm2-135m"],
    "smollm2_idle": ["chat_model=smollm2-135m"],  # the baseline run again, on an otherwise idle machine
    "qwen05": ["chat_model=qwen2.5-coder-0.5b"],
    "qwen15": ["chat_model=qwen2.5-coder-1.5b"],
    "escalate05": ["chat_model=smollm2-135m", "escalation_model=qwen2.5-coder-0.5b"],
    "escalate15": ["chat_model=smollm2-135m", "escalation_model=qwen2.5-coder-1.5b"],
}
METRICS = ("answerable_correct", "abstention_rate", "ungrounded_rate", "leak_rate", "confidently_wrong_rate",
           "mean_attempts", "mean_latency_s")


def run_policy(name: str, data: Path, out: Path, limit: int, seed: int) -> dict:
    settings = [arg for pair in POLICIES[name] for arg in ("--set", pair)]
    command = [sys.executable, "-m", "keel.cli.main", "eval", "squad2", str(data), "--limit", str(limit),
               "--sample-seed", str(seed), "--json", "--report", str(out / name), *settings]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    (out / f"{name}.json").write_text(done.stdout)
    return json.loads(done.stdout)


def table(results: dict[str, dict]) -> str:
    base = results.get(BASELINE, {}).get("mean_latency_s")
    lines = ["| policy | " + " | ".join(METRICS) + " | latency / baseline |",
             "| --- |" + " ---: |" * (len(METRICS) + 1)]
    for name, result in results.items():
        ratio = f"{result['mean_latency_s'] / base:.2f}" if base else "-"
        lines.append(f"| {name} | " + " | ".join(str(result.get(m)) for m in METRICS) + f" | {ratio} |")
    return "\n".join(lines)


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    figure, (rates, latency) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    shown = ("answerable_correct", "abstention_rate", "confidently_wrong_rate", "ungrounded_rate")
    width = 0.8 / len(shown)
    for index, metric in enumerate(shown):
        rates.bar([n + index * width for n in range(len(names))], [results[name][metric] for name in names],
                  width, label=metric)
    rates.set_xticks([n + width * (len(shown) - 1) / 2 for n in range(len(names))], names)
    rates.set_ylim(0, 1)
    rates.set_title("SQuAD 2.0 dev sample: rates by model policy")
    rates.legend(fontsize=8)
    latency.bar(names, [results[name]["mean_latency_s"] for name in names], color="grey")
    latency.set_title("mean latency (s)")
    latency.tick_params(axis="x", rotation=45)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="where each run's JSON and report go")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--sample-seed", type=int, default=1)
    parser.add_argument("--from", dest="existing", action="store_true", help="read OUT/<policy>.json, run nothing")
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.policies:
        path = args.out / f"{name}.json"
        if args.existing:
            if path.is_file() and path.stat().st_size:
                results[name] = json.loads(path.read_text())
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results[name] = run_policy(name, args.data, args.out, args.limit, args.sample_seed)
    print(table(results))
    if args.plot and results:
        plot(results, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
