"""Write an evaluation's JSON and the plots a person would rather look at than read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RATE_KEYS = ("answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate", "leak_rate",
             "confidently_wrong_rate")
TITLES = {"squad2": "SQuAD 2.0", "helpdesk": "help desk", "qa": "QA set"}
CLASS_COLOURS = {"correct": "#6aa84f", "abstained": "#3b7dd8", "missed": "#999999", "confidently_wrong": "#cc0000"}


def write_report(result: dict[str, Any], directory: Path, name: str) -> list[Path]:
    """An eval's result as JSON and its plots as PNG in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / f"{name}.json"]
    written[0].write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if name != "halueval":
        rates = {k: result[k] for k in RATE_KEYS}
        panels = 4 if result.get("by_category") else 3
        fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4.5))
        axes[0].barh(list(rates), list(rates.values()),
                     color=["#cc0000" if k == "confidently_wrong_rate" else "#3b7dd8" for k in rates])
        axes[0].set_xlim(0, 1)
        axes[0].set_title(f"{TITLES.get(name, name)} rates ({result['questions']} questions)")
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
        if panels == 4:
            _plot_outcome_classes(axes[3], result["by_category"])
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


def _plot_outcome_classes(ax, breakdown: dict) -> None:
    """One stacked bar per question group: where the confidently wrong answers come from."""
    groups = list(breakdown)
    left = [0] * len(groups)
    for cls, colour in CLASS_COLOURS.items():
        counts = [breakdown[g][cls] for g in groups]
        ax.barh(groups, counts, left=left, color=colour, label=cls.replace("_", " "))
        left = [a + b for a, b in zip(left, counts, strict=False)]
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("questions")
    ax.set_title("outcome per category")
    ax.legend(fontsize=7, loc="lower right")
