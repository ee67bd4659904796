"""Moderation behind a small interface, so a deployment can plug in Llama Guard or a vendor API.

The graph only depends on ``Moderator.check`` (a question) and ``moderate_answer`` (an answer to a
question: a moderator with ``check_answer`` judges the two together, as Llama Guard does, any other
judges the answer's text). Keel's default is the offline safety classifier
(keel/checks/model_moderation.py); ``KeywordModerator`` is a short list of clearly harmful phrasings
plus the deployment's ``blocked_terms``, a layer in front of whichever model judges.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ModerationResult:
    """A moderator's verdict on a text: safe or not, and the hazard it names."""
    safe: bool
    category: str | None = None  # a hazard code (S1-S14), or the keyword list's own name for what matched
    score: float | None = None  # the model's probability of a refusing category, where it gives one


class Moderator(Protocol):
    """Anything that judges a text safe or not: the offline classifier, Llama Guard, the keywords."""
    def check(self, text: str) -> ModerationResult: ...


def moderate_answer(moderator: Moderator, question: str, answer: str) -> ModerationResult:
    """Judges an answer in the light of its question where the moderator can, else the answer alone."""
    judge_answer = getattr(moderator, "check_answer", None)
    return judge_answer(question, answer) if callable(judge_answer) else moderator.check(answer)


# Keyed by hazard code (keel/core/safety_taxonomy.py): weapons of mass harm, self-harm, malware.
DEFAULT_BLOCKED_PATTERNS: dict[str, Sequence[str]] = {
    "S9": (r"\b(build|make|assemble)\b.{0,40}\b(bomb|explosive|nerve agent|bioweapon)s?\b",),
    "S11": (r"\bhow (do|can|should) i (kill|hurt|harm) myself\b", r"\bbest way to (commit )?suicide\b"),
    "S2": (r"\b(write|create|build)\b.{0,30}\b(ransomware|keylogger|computer virus)\b",),
}


@dataclass
class KeywordModerator:
    """Refuses text matching known-harmful patterns or any of ``extra_terms`` (case-insensitive)."""

    extra_terms: Sequence[str] = ()
    patterns: dict[str, Sequence[str]] = field(default_factory=lambda: dict(DEFAULT_BLOCKED_PATTERNS))

    def check(self, text: str) -> ModerationResult:
        lowered = text.lower()
        for category, patterns in self.patterns.items():
            if any(re.search(p, lowered) for p in patterns):
                return ModerationResult(False, category)
        for term in self.extra_terms:
            if term and term.lower() in lowered:
                return ModerationResult(False, "blocked_term")
        return ModerationResult(True)
