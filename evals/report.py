"""Write an evaluation's JSON and the plots a person would rather look at than read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RATE_KEYS = ("answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate", "leak_rate")


def write_report(result: dict[str, Any], directory: Path, name: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / f"{name}.json"]
    written[0].write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if name == "squad2":
        rates = {k: result[k] for k in RATE_KEYS}
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        axes[0].barh(list(rates), list(rates.values()), color="#3b7dd8")
        axes[0].set_xlim(0, 1)
        axes[0].set_title(f"SQuAD 2.0 rates ({result['questions']} questions)")
        for y, value in enumerate(rates.values()):
            axes[0].text(min(value + 0.02, 0.9), y, f"{value:.2f}", va="center")
        counts = result["status_counts"]
        axes[1].bar(list(counts), list(counts.values()), color="#6aa84f")
        axes[1].set_title("answer status")
        axes[1].tick_params(axis="x", rotation=30)
        latencies = [o["latency_s"] for o in result.get("outcomes", [])]
        axes[2].hist(latencies, bins=20, color="#e69138")
        axes[2].set_title(f"latency per question (mean {result['mean_latency_s']:.2f}s)")
        axes[2].set_xlabel("seconds")
    else:
        keys = ("precision", "recall", "f1", "false_rejection_rate")
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar(keys, [result[k] for k in keys], color=["#3b7dd8", "#3b7dd8", "#6aa84f", "#cc0000"])
        ax.set_ylim(0, 1)
        ax.set_title(f"HaluEval grounding check ({result['rows']} rows)")
        for x, key in enumerate(keys):
            ax.text(x, result[key] + 0.02, f"{result[key]:.2f}", ha="center")
    fig.tight_layout()
    plot = directory / f"{name}.png"
    fig.savefig(plot, dpi=110)
    plt.close(fig)
    written.append(plot)
    return written
