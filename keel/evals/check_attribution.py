"""What each answer check does on a question set, read from the attempts of one run: how many
answers it held back that were right, and how many it stopped that were wrong.

Every failed check is a deduction on an attempt (nodes/validate_answer.py logs one record per
attempt). An attempt whose answer holds a gold answer of an answerable question was right: a check
that deducted from it cost a right answer (unless a later attempt said it anyway). An attempt that
answered an unanswerable question, or an answerable one without any gold, was wrong: a check that
deducted from it kept a wrong answer from the user. A check that stops fewer wrong attempts than it
holds back right ones on the choose sets does not pay for its place.

    keel eval qa --split choose --report DIR     # DIR/qa.json: "checks" per set
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from keel.evals.scoring import contains_gold

ANSWER_LOG = "keel.answer"


class _Attempts(logging.Filter):
    """Collects the telemetry record of every answer attempt logged while it is attached, and lets
    through only what the log would have shown without it (``shown_from`` and up): a filter, not a
    handler, so an eval installs no handler of its own."""

    def __init__(self, shown_from: int) -> None:
        super().__init__()
        self.records: list[dict] = []
        self.shown_from = shown_from

    def filter(self, record: logging.LogRecord) -> bool:
        telemetry = getattr(record, "keel_telemetry", None)
        if isinstance(telemetry, dict):
            self.records.append(telemetry)
        return record.levelno >= self.shown_from


@contextmanager
def attempts_logged() -> Iterator[list[dict]]:
    """The attempts' telemetry records, for the code run inside the block. The answer log makes
    them at INFO while it runs; what it shows stays what it was."""
    logger = logging.getLogger(ANSWER_LOG)
    level = logger.level
    collector = _Attempts(logger.getEffectiveLevel())
    logger.addFilter(collector)
    logger.setLevel(min(logging.INFO, logger.getEffectiveLevel()))
    try:
        yield collector.records
    finally:
        logger.removeFilter(collector)
        logger.setLevel(level)


def judged_attempts(records: Iterable[dict], answers: list[str], answerable: bool) -> list[dict]:
    """Each attempt that answered (not "I don't know"), with the checks that deducted from it and
    whether its answer was right (holds a gold of an answerable question)."""
    judged = []
    for record in records:
        if record.get("abstained") or record.get("error"):
            continue
        answer = record.get("answer_preview") or ""
        judged.append({"strategy": record.get("strategy"), "checks": sorted(record.get("deductions") or {}),
                       "right": answerable and contains_gold(answer, answers)})
    return judged


def attribution(outcomes: Iterable[Any]) -> dict[str, dict[str, int]]:
    """Per check (its reason code without the detail): the right attempts it held back and the
    wrong ones it stopped, over the outcomes' ``attempt_checks``."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for attempt in getattr(outcome, "attempt_checks", None) or []:
            for check in {code.split(":")[0] for code in attempt["checks"]}:
                entry = counts.setdefault(check, {"held_back_right": 0, "stopped_wrong": 0})
                entry["held_back_right" if attempt["right"] else "stopped_wrong"] += 1
    return dict(sorted(counts.items()))
