"""Pure checks on a generated answer: artifacts, abstention, the quality score, extraction.

No I/O here: every function receives the text and passages it needs, so each is easy to test.
Parsing lives in keel/checks/parser.py (five layers, XML tags down to the raw text), reasoning markers in
keel/checks/reasoning_filter.py, grounding in keel/checks/grounding.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

from keel.checks.parser import ECHOED_TAGS
from keel.checks.reasoning_filter import find_leaks, strip_reasoning
from keel.checks.statements import HEADING, by_text, entity_codes, statements
from keel.core.settings.combined import AnswerScoringSettings
from keel.core.text import CITATION_PATTERN, content_words, split_sentences, split_statements

# Phrases that only appear when the model leaks its reasoning. Matched at the start of
# the answer or of a sentence/line, so ordinary words such as "Additionally," mid-answer, or a
# numbered "Step 1:", are not penalised.
ARTIFACT_PATTERNS = [
    re.compile(r"\(in the context of [^)]*\)", re.I),
    re.compile(r"(^|[.!?]\s+)based on the analysis of\b", re.I),
    re.compile(r"</?(thinking|think|reasoning|scratchpad)>", re.I),
    re.compile(r"(^|\n)\s*(thought|thought process|thinking|reasoning|internal|meta)\s*:", re.I),
    re.compile(r"(^|\n)\s*(user|assistant|system)\s*:", re.I),
    re.compile(r"\[/?INST\]|<\|im_(start|end)\|>|<\|assistant\|>|<\|endoftext\|>", re.I),
    *ECHOED_TAGS,  # the prompt's own data delimiters, a wrapper of the model's own
]
# Ways a small model says "the context does not answer this" instead of the exact fallback text.
ABSTENTION_OPENINGS = (
    "i don t know", "i do not know", "the context does not contain", "the provided context does not",
    "the context does not provide", "the context does not mention", "there is no information",
    "the documents do not contain", "the provided documents do not", "i cannot find", "i could not find",
)


def clean_artifacts(text: str) -> str:
    """The text without leaked-reasoning artifacts ("Based on the analysis of ...") and reasoning markers."""
    cleaned = strip_reasoning(text)
    for pattern in ARTIFACT_PATTERNS:
        cleaned = pattern.sub(" ", cleaned)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


def has_artifacts(text: str) -> bool:
    """True when the answer still shows leaked reasoning (an artifact phrase or any reasoning marker)."""
    return any(p.search(text) for p in ARTIFACT_PATTERNS) or bool(find_leaks(text))


def is_fallback(answer: str, fallback_answer: str) -> bool:
    """Did the model abstain? The configured fallback, or a common way of saying the same."""
    normalized = re.sub(r"\W+", " ", answer.lower()).strip()
    fallback = re.sub(r"\W+", " ", fallback_answer.lower()).strip()
    return normalized.startswith(fallback) or normalized.startswith(ABSTENTION_OPENINGS)


@dataclass
class QualityReport:
    """An attempt's quality (1.0 less the deductions) and what each failed check deducted."""
    score: float
    deductions: dict[str, float] = field(default_factory=dict)


def quality_score(
    answer: str,
    question: str,
    cfg: AnswerScoringSettings,
    grounding: float | None = None,
    focus: float | None = None,
    extra: Mapping[str, float] | None = None,
) -> QualityReport:
    """1.0 minus a fixed deduction per failed check (artifacts, too short, too long, duplicate
    sentences, question repeated), plus grounding and focus terms when passages were given;
    ``extra`` adds further named deductions (open for more checks)."""
    deductions: dict[str, float] = {}
    if has_artifacts(answer):
        deductions["artifacts"] = cfg.artifact_penalty
    if len(answer.strip()) < cfg.too_short_chars:
        deductions["too_short"] = cfg.too_short_penalty
    if len(answer) > cfg.too_long_chars:
        deductions["too_long"] = cfg.too_long_penalty
    if _has_duplicate_sentences(answer, cfg.duplicate_sentence_min_chars):
        deductions["duplicate_sentences"] = cfg.duplicate_sentence_penalty
    if _repeats_question(answer, question, cfg.question_repeat_min_chars):
        deductions["question_repeated"] = cfg.question_repeated_penalty
    if grounding is not None and grounding < cfg.grounding_threshold:
        deductions["ungrounded"] = cfg.ungrounded_penalty
    if focus is not None and focus < cfg.answer_focus_ratio:
        deductions["off_focus"] = cfg.off_focus_penalty
    deductions.update({name: float(value) for name, value in (extra or {}).items() if value})
    score = max(0.0, round(1.0 - sum(deductions.values()), 4))
    return QualityReport(score, deductions)


def _has_duplicate_sentences(answer: str, min_chars: int) -> bool:
    seen: set[str] = set()
    for sentence in split_sentences(answer):
        key = re.sub(r"\W+", " ", CITATION_PATTERN.sub("", sentence).lower()).strip()
        if len(key) > min_chars and key in seen:
            return True
        seen.add(key)
    return False


def _repeats_question(answer: str, question: str, min_chars: int) -> bool:
    q = re.sub(r"\W+", " ", question.lower()).strip()
    return len(q) > min_chars and q in re.sub(r"\W+", " ", answer.lower())


def ranked_context_sentences(
    question: str,
    passages: Sequence[tuple[int, str]],
    similarities: Callable[[str, list[str]], list[float]] | None = None,
    split: Callable[[str], list[str]] = split_sentences,
) -> list[tuple[int, str]]:
    """The context sentences (passage number, sentence), most relevant to the question first:
    those about a code the question names ("E8", "ZR-200": naming it, or under a heading or in a
    paragraph that does) before the rest, each group by
    ``similarities`` (embedding cosine of question vs sentence) when given, else by shared content
    words; ties keep reading order. Sentences of fewer than two content words are skipped. An
    embedding reads "What does error code E8 mean?" as close to any line about errors; the row
    that names E8 is the one about it."""
    candidates = [
        (number, sentence)
        for number, text in passages
        for sentence in split(text)
        if len(content_words(sentence)) >= 2
    ]
    if not candidates:
        return []
    sentences = [sentence for _, sentence in candidates]
    if similarities is not None:
        scores = list(similarities(question, sentences))
    else:
        wanted = content_words(question)
        scores = [len(content_words(s) & wanted) / (len(wanted) or 1) for s in sentences]
    asked = entity_codes(question)
    about = by_text(statements(text for _, text in passages)) if asked else {}  # a row under "## Vela V20" is the V20's
    named = [bool(asked & entity_codes(sentence).union(*(s.entities for s in about.get(sentence, ()))))
             for sentence in sentences]
    return [candidates[i] for i in sorted(range(len(candidates)), key=lambda i: (not named[i], -scores[i], i))]


# A sentence whose content is what follows it: "... is the following.", "... like this:".
ANNOUNCES_WHAT_FOLLOWS = re.compile(r"(?::|\bthe following\W*|\bas follows\W*)\s*$", re.I)


def best_supported_sentences(
    question: str,
    passages: Sequence[tuple[int, str]],
    limit: int,
    similarities: Callable[[str, list[str]], list[float]] | None = None,
    fits: Callable[[str], bool] | None = None,
    quote: Callable[[str], str] | None = None,
) -> list[str]:
    """The context sentences that best answer the question, each with its [Source N] citation, in
    reading order: the extractive last resort of the answer loop. ``fits`` (when given) keeps only
    sentences that can answer it (the asked type, about the asked entity); ``quote`` (when given)
    says which part of a chosen sentence to quote. A table row or list item is a sentence of its own,
    so a spec table is never quoted whole."""
    ranked = [(number, sentence) for number, sentence in
              ranked_context_sentences(question, passages, similarities, split_statements)
              # "## Press and partnerships" names a topic, "... a definition like the following:" announces
              # what comes after it: neither answers anything quoted alone
              if not HEADING.match(sentence) and not ANNOUNCES_WHAT_FOLLOWS.search(sentence)]
    quote = quote or (lambda sentence: sentence)
    quoted = ((candidate, quote(candidate[1])) for candidate in ranked)
    chosen = list(islice(((c, text) for c, text in quoted if fits is None or fits(text)), limit))
    order = {candidate: position for position, candidate in enumerate(
        (number, sentence) for number, text in passages for sentence in split_statements(text))}
    return [f"{text} [Source {c[0]}]" for c, text in sorted(chosen, key=lambda pair: order.get(pair[0], 0))]
