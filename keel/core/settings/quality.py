"""The answer loop: an attempt is parsed, scored (deductions for artifacts, length, repetition,
ungrounded text) and retried with a stricter prompt until it reaches quality_threshold or
max_attempts run out."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, SHARE, CheckedSettings
from keel.core.settings.connection import env_value
from keel.core.settings.runtime import POOL_MODEL_NAMES
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class QualitySettings(CheckedSettings):
    """Parsing, scoring and retries of an answer."""

    quality_threshold: float = field(
        default=0.6,
        metadata={"doc": "An attempt's quality score (1.0 minus its deductions) must reach this to be the answer; "
                  "below, it is retried.", **SHARE},
    )
    max_attempts: int = field(
        default=3,
        metadata={"doc": "Attempts per answer (the first, the stricter retries, the extractive last one) before the "
                  "fallback.", **AT_LEAST_ONE},
    )
    escalation_model: str | None = field(
        default_factory=lambda: env_value("KEEL_ESCALATION_MODEL"),
        metadata={"doc": "A stronger pool model that writes the retries from escalate_from_attempt on, when the "
                  "attempts before stayed below quality_threshold; None = every attempt uses chat_model.",
                  "choices": POOL_MODEL_NAMES, "env": "KEEL_ESCALATION_MODEL"},
    )
    escalate_from_attempt: int = field(
        default=2, metadata={"doc": "The first attempt escalation_model writes (the first attempt is always "
                             "chat_model's).", "minimum": 2},
    )
    artifact_penalty: float = field(
        default=0.4, metadata={"doc": "Deducted from the quality score when the answer still shows leaked reasoning "
                               "(an artifact phrase or a reasoning marker).", **SHARE},
    )
    too_short_chars: int = field(
        default=20, metadata={"doc": "An answer with fewer characters than this is too short.", **NON_NEGATIVE}
    )
    too_short_penalty: float = field(
        default=0.3, metadata={"doc": "Deducted from the quality score for a too-short answer.", **SHARE}
    )
    too_long_chars: int = field(
        default=2000, metadata={"doc": "An answer with more characters than this is too long.", **AT_LEAST_ONE}
    )
    too_long_penalty: float = field(
        default=0.1, metadata={"doc": "Deducted from the quality score for a too-long answer.", **SHARE}
    )
    duplicate_sentence_penalty: float = field(
        default=0.2, metadata={"doc": "Deducted from the quality score when the answer says a sentence twice.", **SHARE}
    )
    question_repeated_penalty: float = field(
        default=0.1, metadata={"doc": "Deducted from the quality score when the answer repeats the question.", **SHARE}
    )
    ungrounded_penalty: float = field(
        default=0.5, metadata={"doc": "Deducted when the grounding score is below grounding_threshold.", **SHARE}
    )
    # --- the score's checks -------------------------------------------------------------------------
    duplicate_sentence_min_chars: int = field(
        default=10, metadata={"doc": "Sentences shorter than this many characters are not counted as duplicates by "
                              "the quality score.", **NON_NEGATIVE}
    )
    question_repeat_min_chars: int = field(
        default=15, metadata={"doc": "Questions shorter than this many characters are not checked for being repeated "
                              "in the answer.", **NON_NEGATIVE}
    )
    max_parse_chars: int = field(
        default=20_000,
        metadata={"doc": "The parser reads at most this much of a model's output, so a "
                  "runaway output cannot make parsing slow (characters).", **AT_LEAST_ONE},
    )
    extractive_sentences: int = field(
        default=2, metadata={"doc": "Sentences in the extractive last-resort answer.", **AT_LEAST_ONE}
    )
    strict_passage_fraction: float = field(
        default=0.5, metadata={"doc": "The strict retry keeps this share of the passages (the better half).",
                               "exclusive_minimum": 0.0, "maximum": 1.0}
    )
    embedding_cache_size: int = field(
        default=8192, metadata={"doc": "Texts whose vectors the answer checks keep (LRU); ~12 MiB at 384 dims; "
                                "0 = none kept.", **NON_NEGATIVE}
    )
