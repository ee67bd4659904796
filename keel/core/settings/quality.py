"""The answer loop: an attempt is parsed, scored (deductions for artifacts, length, repetition,
ungrounded text) and retried with a stricter prompt until it reaches quality_threshold or
max_attempts run out."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class QualitySettings:
    """Parsing, scoring and retries of an answer."""

    quality_threshold: float = 0.6
    max_attempts: int = 3
    artifact_penalty: float = 0.4
    too_short_chars: int = 20
    too_short_penalty: float = 0.3
    too_long_chars: int = 2000
    too_long_penalty: float = 0.1
    duplicate_sentence_penalty: float = 0.2
    question_repeated_penalty: float = 0.1
    ungrounded_penalty: float = field(
        default=0.5, metadata={"doc": "Deducted when the grounding score is below grounding_threshold."}
    )
    # --- the score's checks -------------------------------------------------------------------------
    duplicate_sentence_min_chars: int = field(
        default=10, metadata={"doc": "Shorter sentences are not counted as duplicates by the quality score."}
    )
    question_repeat_min_chars: int = field(
        default=15, metadata={"doc": "Shorter questions are not checked for being repeated in the answer."}
    )
    max_parse_chars: int = field(
        default=20_000,
        metadata={"doc": "The parser reads at most this much of a model's output, so a "
                  "runaway output cannot make parsing slow."},
    )
    extractive_sentences: int = field(default=2, metadata={"doc": "Sentences in the extractive last-resort answer."})
    strict_passage_fraction: float = field(
        default=0.5, metadata={"doc": "The strict retry keeps this share of the passages (the better half)."}
    )
    embedding_cache_size: int = field(
        default=8192, metadata={"doc": "Texts whose vectors the answer checks keep (LRU); ~12 MiB at 384 dims."}
    )
