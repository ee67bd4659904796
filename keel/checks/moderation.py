"""Moderation behind a small interface, so a deployment can plug in Llama Guard or a vendor API.

The built-in ``KeywordModerator`` is deliberately modest: it refuses a short list of clearly harmful
requests (weapons, self-harm instructions, malware) and is a placeholder for a model-based
moderator. The graph only depends on ``Moderator.check``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, Sequence


@dataclass(frozen=True)
class ModerationResult:
    safe: bool
    category: str | None = None


class Moderator(Protocol):
    def check(self, text: str) -> ModerationResult: ...


DEFAULT_BLOCKED_PATTERNS: dict[str, Sequence[str]] = {
    "weapons": (r"\b(build|make|assemble)\b.{0,40}\b(bomb|explosive|nerve agent|bioweapon)s?\b",),
    "self_harm": (r"\bhow (do|can|should) i (kill|hurt|harm) myself\b", r"\bbest way to (commit )?suicide\b"),
    "malware": (r"\b(write|create|build)\b.{0,30}\b(ransomware|keylogger|computer virus)\b",),
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
