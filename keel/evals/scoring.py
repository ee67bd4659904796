"""How every question-answering eval scores an answer, so SQuAD 2.0 and help-desk numbers mean the same.

Each question ends in exactly one outcome class: ``correct`` (answerable, answered with a gold),
``abstained`` (unanswerable, "I don't know"), ``missed`` (answerable, "I don't know") or
``confidently_wrong`` (a success status with a wrong answer: an unanswerable question answered, or
an answer without any gold). The last is the worst thing Keel can show a user, worse than a refusal.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

OUTCOME_CLASSES = ("correct", "abstained", "missed", "confidently_wrong")
_PUNCTUATION = set(string.punctuation)


@dataclass
class Outcome:
    """One question asked and scored: the answer, its status, and whether it was right."""
    qid: str
    question: str
    impossible: bool
    answers: list[str]
    answer: str
    status: str
    attempts: int
    latency_s: float
    correct: bool = False
    grounded: bool | None = None
    leaked: bool = False
    reasons: list[str] = field(default_factory=list)
    category: str = ""
    source: str = ""
    # each attempt that answered: the checks that deducted from it and whether it was right
    attempt_checks: list[dict] = field(default_factory=list)


def normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def contains_gold(answer: str, golds: Iterable[str]) -> bool:
    """True when some gold answer, normalised, is a substring of the normalised answer."""
    normalized = normalize(answer)
    return any(normalize(g) and normalize(g) in normalized for g in golds)


def is_confidently_wrong(outcome: Outcome) -> bool:
    """A success the user would trust that answers something unanswerable or lacks every gold."""
    return outcome.status == "success" and (outcome.impossible or not outcome.correct)


def outcome_class(outcome: Outcome) -> str:
    """Confidently wrong, correct, abstained (rightly) or missed."""
    if is_confidently_wrong(outcome):
        return "confidently_wrong"
    if outcome.status == "success":
        return "correct"
    return "abstained" if outcome.impossible else "missed"


def _rate(items: list[Outcome], predicate: Callable[[Outcome], bool]) -> float:
    return round(sum(1 for o in items if predicate(o)) / len(items), 4) if items else 0.0


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def metrics(outcomes: list[Outcome]) -> dict[str, Any]:
    """The rates every QA eval reports; ``confidently_wrong_rate`` is over all questions."""
    answerable = [o for o in outcomes if not o.impossible]
    unanswerable = [o for o in outcomes if o.impossible]
    succeeded = [o for o in outcomes if o.status == "success"]
    return {
        "answerable_correct": _rate(answerable, lambda o: o.correct),
        "abstention_rate": _rate(unanswerable, lambda o: o.status != "success"),
        "false_abstention_rate": _rate(answerable, lambda o: o.status != "success"),
        "ungrounded_rate": _rate(succeeded, lambda o: o.grounded is False),
        "leak_rate": _rate(outcomes, lambda o: o.leaked),
        "confidently_wrong_rate": _rate(outcomes, is_confidently_wrong),
        "mean_latency_s": _mean([o.latency_s for o in outcomes]),
        "mean_attempts": _mean([o.attempts for o in outcomes]),
        "questions": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "status_counts": {s: sum(1 for o in outcomes if o.status == s) for s in sorted({o.status for o in outcomes})},
    }


def by_category(outcomes: list[Outcome]) -> dict[str, dict[str, Any]]:
    """Outcome classes per ``answerable/<category>`` or ``unanswerable/<category>`` group: where the
    wrong successes come from (a look-alike model, a neighbouring number, an unnamed person)."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        kind = "unanswerable" if outcome.impossible else "answerable"
        groups.setdefault(f"{kind}/{outcome.category}" if outcome.category else kind, []).append(outcome)
    breakdown = {}
    for name in sorted(groups):
        items = groups[name]
        counts = {cls: sum(1 for o in items if outcome_class(o) == cls) for cls in OUTCOME_CLASSES}
        breakdown[name] = {"questions": len(items), **counts,
                           "confidently_wrong_rate": _rate(items, is_confidently_wrong)}
    return breakdown
