"""Answering beyond max_new_tokens: a cut-off answer is continued in further, smaller calls, and each
continuation is checked (while it streams and when it is done) for drifting off the question, the
documents or the answer's plan, for switching language and for repeating what the answer already says;
only its new sentences are stitched on."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class ContinuationSettings(CheckedSettings):
    """How far an answer is continued, what a continuation must pass, and what of it is new."""

    # --- how far an answer is continued -----------------------------------------------------------
    continuation_fraction: float = field(
        default=0.5,
        metadata={"doc": "Share of max_new_tokens each continuation call may write.", "exclusive_minimum": 0.0,
                  "maximum": 1.0},
    )
    max_total_tokens_factor: float = field(
        default=5.0,
        metadata={"doc": "An answer with its continuations is at most this many times max_new_tokens long.",
                  "minimum": 1.0},
    )
    max_continuations: int = field(
        default=10, metadata={"doc": "Continuation calls one answer may take at most; 0 = never continue.", **NON_NEGATIVE}
    )
    min_continuation_tokens: int = field(
        default=4,
        metadata={"doc": "A continuation step with fewer tokens than this cannot add a sentence: stop.", **AT_LEAST_ONE},
    )
    # --- what a continuation must pass, while it streams and when it is done -----------------------
    stream_check_every_chunks: int = field(
        default=30, metadata={"doc": "A continuation is checked while it streams, every this many chunks.", **AT_LEAST_ONE}
    )
    stream_check_min_chars: int = field(
        default=150, metadata={"doc": "A streaming continuation is judged for relevance once it has this many characters.",
                               **NON_NEGATIVE},
    )
    continuation_tail_chars: int = field(
        default=300,
        metadata={"doc": "Characters of the answer so far that the continuation prompt and checks see.", **AT_LEAST_ONE},
    )
    off_topic_similarity: float = field(
        default=0.2,
        metadata={"doc": "A continuation (150+ chars) below this similarity to both the question and the "
                  "answer so far has drifted off-topic and is dropped.", **SHARE},
    )
    domain_off_topic_similarity: float = field(
        default=0.25,
        metadata={"doc": "A continuation below this similarity to every passage of the user's documents has "
                  "left their domain and is dropped.", **SHARE},
    )
    off_plan_similarity: float = field(
        default=0.2,
        metadata={"doc": "A continuation that names none of the answer's planned items (its "
                  "headings and list items) and is below this similarity to them is off-plan.", **SHARE},
    )
    off_numbering_similarity: float = field(
        default=0.25,
        metadata={"doc": "A continuation of a numbered list that lacks the next number and is below this "
                  "similarity to the list's items is off-plan.", **SHARE},
    )
    language_switch_min_letters: int = field(
        default=20,
        metadata={"doc": "Letters a piece needs before its language is compared; shorter pieces (names, "
                  "numbers) give no reliable language.", **AT_LEAST_ONE},
    )
    language_min_stopwords: int = field(
        default=3,
        metadata={"doc": "Stopwords of one language a piece needs before its language is named; fewer is "
                  "too little evidence.", **AT_LEAST_ONE},
    )
    language_dominance_ratio: float = field(
        default=2.0,
        metadata={"doc": "The named language needs this many times the runner-up's stopwords, so mixed text "
                  "is not taken for a switch.", "minimum": 1.0},
    )
    context_window_words: int = field(
        default=120,
        metadata={"doc": "Passages are cut into windows of this many words for relevance checks "
                  "(all-MiniLM-L6-v2 reads ~256 word pieces).", **AT_LEAST_ONE},
    )
    stitch_restart_overlap: float = field(
        default=0.6,
        metadata={"doc": "Token overlap at which a continuation is taken to restart the cut sentence (which "
                  "is then replaced, not repeated).", **SHARE},
    )
    # --- what of a continuation is new: a sentence (or the whole text) is a repeat only when both its
    # embedding similarity AND its token overlap with what was said reach the pair of thresholds.
    repetition_similarity: float = field(
        default=0.9,
        metadata={"doc": "A whole continuation above this embedding similarity to the answer so far (and above "
                  "repetition_token_overlap) says it again and is dropped.", **SHARE},
    )
    repetition_token_overlap: float = field(
        default=0.9,
        metadata={"doc": "A whole continuation with more than this share of its tokens in the answer so far (and "
                  "above repetition_similarity) says it again and is dropped.", **SHARE},
    )
    near_duplicate_similarity: float = field(
        default=0.95,
        metadata={"doc": "A continuation, or one of its sentences, above this embedding similarity to what was said "
                  "(and above near_duplicate_token_overlap) is a near duplicate and is dropped.", **SHARE},
    )
    near_duplicate_token_overlap: float = field(
        default=0.85,
        metadata={"doc": "The token overlap (share of tokens) that goes with near_duplicate_similarity.", **SHARE},
    )
    duplicate_sentence_similarity: float = field(
        default=0.9,
        metadata={"doc": "A continuation's sentence above this embedding similarity to a sentence already said (and "
                  "above duplicate_sentence_token_overlap) repeats it and is dropped.", **SHARE},
    )
    duplicate_sentence_token_overlap: float = field(
        default=0.9,
        metadata={"doc": "The token overlap (share of tokens) that goes with duplicate_sentence_similarity.", **SHARE},
    )
    dedup_phrase_words: int = field(
        default=4, metadata={"doc": "Words per phrase when repeats are found phrase by phrase.", **AT_LEAST_ONE}
    )
    phrase_duplicate_share: float = field(
        default=0.5,
        metadata={"doc": "A sentence of which this share of its phrases (dedup_phrase_words long) were already said "
                  "is dropped.", **SHARE},
    )
    # --- the continuation prompt --------------------------------------------------------------------
    covered_topics_limit: int = field(
        default=8,
        metadata={"doc": "Topics the answer has covered, named in the continuation prompt so the model "
                  "does not repeat them, at most.", **NON_NEGATIVE},
    )
    topic_label_words: int = field(
        default=6, metadata={"doc": "Words of a list item kept as its topic label.", **AT_LEAST_ONE}
    )
