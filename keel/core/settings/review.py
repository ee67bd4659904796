"""Human review of weak answers: which turns a person approves, edits or rejects before the asker
sees them, and what the asker is told meanwhile and after a rejection.

Every field is deployment scope: whether answers are reviewed is the deployment's decision, so a
caller can neither skip review nor hold someone else's answers back (keel/server/settings_policy.py
refuses these keys in a request, LangGraph Studio's auth in a run). ``KEEL_REVIEW_MODE`` and
``KEEL_REVIEW_STATUSES`` set the two that decide it for ``keel serve``, ``keel ask`` and ``keel chat``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.checks import AT_LEAST_ONE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope

ReviewMode = Literal["off", "always", "below_threshold", "statuses"]
# The statuses an answering step can end a turn with (a refused question or an over-long one never
# reaches one, and so is never reviewed).
REVIEWABLE_STATUSES = ("success", "insufficient_context", "low_confidence", "hallucination_detected", "not_safe",
                       "error")
DEFAULT_REVIEW_STATUSES = ("low_confidence", "hallucination_detected")
REVIEW_MODE_VARIABLE = "KEEL_REVIEW_MODE"
REVIEW_STATUSES_VARIABLE = "KEEL_REVIEW_STATUSES"


def _mode_from_environment() -> str:
    return os.environ.get(REVIEW_MODE_VARIABLE, "").strip() or "off"


def _statuses_from_environment() -> tuple[str, ...]:
    listed = [item.strip() for item in os.environ.get(REVIEW_STATUSES_VARIABLE, "").split(",") if item.strip()]
    return tuple(listed) or DEFAULT_REVIEW_STATUSES


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class ReviewSettings(CheckedSettings):
    """When a turn waits for a reviewer, and what the asker sees while it waits and after a rejection."""

    review_mode: ReviewMode = field(
        default_factory=_mode_from_environment,
        metadata={"doc": "Which answers a reviewer approves, edits or rejects before the asker sees them: off; "
                  "always; below_threshold (the quality stays below quality_threshold after the retries); "
                  "statuses (the turn ends with one of review_statuses).", "env": REVIEW_MODE_VARIABLE},
    )
    review_statuses: tuple[str, ...] = field(
        default_factory=_statuses_from_environment,
        metadata={"doc": "With review_mode statuses: the statuses whose turns are reviewed (comma-separated in "
                  "KEEL_REVIEW_STATUSES).", "choices": REVIEWABLE_STATUSES, "env": REVIEW_STATUSES_VARIABLE},
    )
    review_pending_message: str = field(
        default="A reviewer is checking this answer; it will appear here once they have.",
        metadata={"doc": "What the asker is told (status awaiting_review) while the answer waits for a reviewer.",
                  "min_chars": 1},
    )
    review_rejected_answer: str | None = field(
        default=None,
        metadata={"doc": "What the asker gets when a reviewer rejects the draft (status review_rejected); None = "
                  "the fallback answer in the question's language.", "min_chars": 1},
    )
    review_queue_collection: str = field(
        default="review_queue",
        metadata={"doc": "MongoDB collection of the answers waiting for review (in mongodb_database).",
                  "min_chars": 1},
    )
    review_queue_listed: int = field(
        default=100, metadata={"doc": "The most review items one listing shows, oldest first.", **AT_LEAST_ONE}
    )
    review_text_max_chars: int = field(
        default=8000,
        metadata={"doc": "Longest answer text a reviewer may write when editing, or note when rejecting, in "
                  "characters.", **AT_LEAST_ONE},
    )
