"""Answering beyond max_new_tokens: a cut-off answer is continued in further, smaller calls, and each
continuation is checked (while it streams and when it is done) for drifting off the question, the
documents or the answer's plan, for switching language and for repeating what the answer already says;
only its new sentences are stitched on."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class ContinuationSettings:
    """How far an answer is continued, what a continuation must pass, and what of it is new."""

    # --- how far an answer is continued -----------------------------------------------------------
    continuation_fraction: float = field(default=0.5, metadata={"doc": "Each continuation gets 50% of max_new_tokens."})
    max_total_tokens_factor: float = field(default=5.0, metadata={"doc": "At most 5x max_new_tokens in total."})
    max_continuations: int = 10
    min_continuation_tokens: int = field(
        default=4, metadata={"doc": "A continuation step with fewer tokens than this cannot add a sentence: stop."}
    )
    # --- what a continuation must pass, while it streams and when it is done -----------------------
    stream_check_every_chunks: int = field(default=30, metadata={"doc": "Streamed continuation checked every 30 chunks."})
    stream_check_min_chars: int = field(default=150, metadata={"doc": "Relevance is judged from 150+ chars on."})
    continuation_tail_chars: int = field(
        default=300, metadata={"doc": "How much of the answer so far the continuation prompt and checks see."}
    )
    off_topic_similarity: float = field(
        default=0.2,
        metadata={"doc": "A continuation (150+ chars) below this similarity to both the question and the "
                  "answer so far has drifted off-topic and is dropped."},
    )
    domain_off_topic_similarity: float = field(
        default=0.25,
        metadata={"doc": "A continuation below this similarity to every passage of the user's documents has "
                  "left their domain and is dropped."},
    )
    off_plan_similarity: float = field(
        default=0.2,
        metadata={"doc": "A continuation that names none of the answer's planned items (its "
                  "headings and list items) and is below this similarity to them is off-plan."},
    )
    off_numbering_similarity: float = field(
        default=0.25,
        metadata={"doc": "A continuation of a numbered list that lacks the next number and is below this "
                  "similarity to the list's items is off-plan."},
    )
    language_switch_min_letters: int = field(
        default=20,
        metadata={"doc": "Letters a piece needs before its language is compared; shorter pieces (names, "
                  "numbers) give no reliable language."},
    )
    language_min_stopwords: int = field(
        default=3,
        metadata={"doc": "Stopwords of one language a piece needs before its language is named; fewer is "
                  "too little evidence."},
    )
    language_dominance_ratio: float = field(
        default=2.0,
        metadata={"doc": "The named language needs this many times the runner-up's stopwords, so mixed text "
                  "is not taken for a switch."},
    )
    context_window_words: int = field(
        default=120,
        metadata={"doc": "Passages are cut into windows of this many words for relevance checks "
                  "(all-MiniLM-L6-v2 reads ~256 word pieces)."},
    )
    stitch_restart_overlap: float = field(
        default=0.6,
        metadata={"doc": "Token overlap at which a continuation is taken to restart the cut sentence (which "
                  "is then replaced, not repeated)."},
    )
    # --- what of a continuation is new: a sentence (or the whole text) is a repeat only when both its
    # embedding similarity AND its token overlap with what was said reach the pair of thresholds.
    repetition_similarity: float = 0.9
    repetition_token_overlap: float = 0.9
    near_duplicate_similarity: float = 0.95
    near_duplicate_token_overlap: float = 0.85
    duplicate_sentence_similarity: float = 0.9
    duplicate_sentence_token_overlap: float = 0.9
    dedup_phrase_words: int = field(default=4, metadata={"doc": "Phrase-level dedup compares 4-word phrases."})
    phrase_duplicate_share: float = field(
        default=0.5, metadata={"doc": "A sentence of which this share of 4-word phrases were already said is dropped."}
    )
    # --- the continuation prompt --------------------------------------------------------------------
    covered_topics_limit: int = field(
        default=8,
        metadata={"doc": "Topics the answer has covered, named in the continuation prompt so the model "
                  "does not repeat them, at most."},
    )
    topic_label_words: int = field(default=6, metadata={"doc": "Words of a list item kept as its topic label."})
