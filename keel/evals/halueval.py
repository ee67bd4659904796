"""`keel eval halueval`: does the grounding check catch hallucinated answers (HaluEval QA)?

For each row, the right and the hallucinated answer both go through the same grounding check
against the row's knowledge. Scored on the length-matched rows by default (the two answers differ
by at most 2 words), because in this data set answer length alone separates most pairs and the
check must be judged on what it verifies, not on form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from keel.checks.grounding import check_grounding
from keel.core.configuration import Configuration

LENGTH_MATCH_WORDS = 2


@dataclass
class HaluRow:
    """One HaluEval QA row: the knowledge, the question, a right and a hallucinated answer."""
    knowledge: str
    question: str
    right_answer: str
    hallucinated_answer: str

    @property
    def length_matched(self) -> bool:
        return abs(len(self.right_answer.split()) - len(self.hallucinated_answer.split())) <= LENGTH_MATCH_WORDS


def load_rows(path: Path) -> list[HaluRow]:
    """The rows of a HaluEval QA file (JSON lines), with the line of a bad one named."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                rows.append(HaluRow(*(str(data[k]) for k in ("knowledge", "question", "right_answer", "hallucinated_answer"))))
            except (ValueError, KeyError) as error:
                raise ValueError(f"{path}:{number}: not a HaluEval QA row ({error})") from error
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def split_glued_sentences(text: str) -> str:
    """HaluEval glues its knowledge paragraphs ("...century.First for Women"); restore the break."""
    return re.sub(r"([a-z0-9)\]\"'])\.([A-Z])", r"\1. \2", text)


def evaluate(
    rows: Iterable[HaluRow],
    cfg: Configuration,
    similarities: Callable[[str, list[str]], list[float]] | None = None,
    progress: bool = False,
) -> dict:
    """How often the grounding check passes the right answer and refuses the hallucinated one."""
    rows = list(rows)
    caught = false_rejections = 0
    iterator = rows
    if progress:
        from tqdm import tqdm

        iterator = tqdm(rows, desc="halueval", unit="row")
    for row in iterator:
        knowledge = [split_glued_sentences(row.knowledge)]

        def grounded(answer: str, knowledge: list[str] = knowledge, row=row) -> bool:
            # The same function the graph's validate_answer runs (chains.grounding.check_grounding).
            report = check_grounding(answer, knowledge, cfg, row.question, similarities)
            return report.passes(cfg.grounding_threshold)

        caught += not grounded(row.hallucinated_answer)
        false_rejections += not grounded(row.right_answer)
    n = len(rows)
    precision = caught / (caught + false_rejections) if caught + false_rejections else 0.0
    recall = caught / n if n else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "false_rejection_rate": round(false_rejections / n, 4) if n else 0.0,
        "rows": n,
    }
