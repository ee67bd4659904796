"""Pure checks on a generated answer: parsing, quality score, grounding, citations, extraction.

No I/O here: every function receives the text and passages it needs, so each is easy to test.
Issue-level depth (seed 001's full parser, seed 004's layers) grows in this module's siblings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from graph.configuration import Configuration

MAX_PARSE_CHARS = 20_000

# Phrases that only appear when the model leaks its reasoning. Matched at the start of the answer or
# of a sentence, so ordinary words such as "Additionally," mid-answer are not penalised.
ARTIFACT_PATTERNS = [
    re.compile(r"\(in the context of [^)]*\)", re.I),
    re.compile(r"(^|[.!?]\s+)based on the analysis of\b", re.I),
    re.compile(r"</?(thinking|think|reasoning|scratchpad)>", re.I),
    re.compile(r"(^|\n)\s*(thought|reasoning|step \d+)\s*:", re.I),
    re.compile(r"(^|\n)\s*(user|assistant|system)\s*:", re.I),
    re.compile(r"\[/?INST\]|<\|im_(start|end)\|>|<\|assistant\|>", re.I),
]

CITATION_PATTERN = re.compile(r"\[\s*Source\s+(\d+)\s*\]", re.I)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
WORD = re.compile(r"[\w'-]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an the of to in on at for by with and or but is are was were be been it its this that these those "
    "as from into than then so such not no yes do does did has have had i you he she we they".split()
)


@dataclass
class ParsedAnswer:
    text: str
    layer: str


def parse_answer(raw: str) -> ParsedAnswer:
    """Find the user-facing answer in raw model output, trying the most explicit format first."""
    raw = (raw or "")[:MAX_PARSE_CHARS]
    match = re.search(r"<answer>(.*?)(</answer>|$)", raw, re.S | re.I)
    if match and match.group(1).strip():
        return ParsedAnswer(_tidy(match.group(1)), "xml")
    thinking_end = re.search(r"</thinking>", raw, re.I)
    if thinking_end and raw[thinking_end.end():].strip():
        return ParsedAnswer(_tidy(raw[thinking_end.end():]), "xml")
    from_json = _answer_from_json(raw)
    if from_json:
        return ParsedAnswer(_tidy(from_json), "json")
    final = re.search(r"final\s+answer\s*:\s*(.+)", raw, re.S | re.I)
    if final and final.group(1).strip():
        return ParsedAnswer(_tidy(final.group(1)), "final_answer")
    cleaned = clean_artifacts(raw)
    if cleaned != raw.strip():
        return ParsedAnswer(cleaned, "regex")
    return ParsedAnswer(raw.strip(), "raw")


def _answer_from_json(raw: str) -> str | None:
    """Scan with a real JSON decoder so nested braces work."""
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", raw)):
        try:
            value, _ = decoder.raw_decode(raw[start:])
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            return value["answer"]
    return None


LEAD_IN = re.compile(r"^\s*((the\s+)?(final\s+)?answer(\s+is)?|response)\s*:\s*", re.I)


def _tidy(text: str) -> str:
    text = re.sub(r"</?answer>", "", text, flags=re.I)
    return LEAD_IN.sub("", text.strip()).strip()


def clean_artifacts(text: str) -> str:
    cleaned = re.sub(r"<(thinking|think)>.*?</\1>", "", text, flags=re.S | re.I)
    for pattern in ARTIFACT_PATTERNS:
        cleaned = pattern.sub(" ", cleaned)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


def has_artifacts(text: str) -> bool:
    return any(p.search(text) for p in ARTIFACT_PATTERNS)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_SPLIT.split(text.strip()) if s.strip()]


def content_words(text: str) -> set[str]:
    words = {w.lower() for w in WORD.findall(CITATION_PATTERN.sub(" ", text))}
    return {w for w in words if w not in STOPWORDS}


def word_overlap(sentence: str, passage: str) -> float:
    """Share of the sentence's content words that appear in the passage (seed 004)."""
    words = content_words(sentence)
    if not words:
        return 1.0
    return len(words & content_words(passage)) / len(words)


def grounding_score(answer: str, passages: Sequence[str], min_overlap: float) -> float:
    """Grounded sentences / sentences; a sentence is grounded when some passage covers it."""
    sentences = [s for s in split_sentences(answer) if content_words(s)]
    if not sentences:
        return 0.0
    grounded = sum(1 for s in sentences if any(word_overlap(s, p) >= min_overlap for p in passages))
    return grounded / len(sentences)


def cited_sources(answer: str) -> list[int]:
    return sorted({int(n) for n in CITATION_PATTERN.findall(answer)})


def is_fallback(answer: str, fallback_answer: str) -> bool:
    normalized = re.sub(r"\W+", " ", answer.lower()).strip()
    return normalized.startswith(re.sub(r"\W+", " ", fallback_answer.lower()).strip()) or normalized.startswith(
        "i don t know"
    )


@dataclass
class QualityReport:
    score: float
    deductions: dict[str, float] = field(default_factory=dict)


def quality_score(
    answer: str,
    question: str,
    cfg: Configuration,
    grounding: float | None = None,
    focus: float | None = None,
) -> QualityReport:
    """Seed 001's deduction table, plus grounding (seed 004) and focus terms when passages were given."""
    deductions: dict[str, float] = {}
    if has_artifacts(answer):
        deductions["artifacts"] = cfg.artifact_penalty
    if len(answer.strip()) < cfg.too_short_chars:
        deductions["too_short"] = cfg.too_short_penalty
    if len(answer) > cfg.too_long_chars:
        deductions["too_long"] = cfg.too_long_penalty
    if _has_duplicate_sentences(answer):
        deductions["duplicate_sentences"] = cfg.duplicate_sentence_penalty
    if _repeats_question(answer, question):
        deductions["question_repeated"] = cfg.question_repeated_penalty
    if grounding is not None and grounding < cfg.grounding_threshold:
        deductions["ungrounded"] = cfg.ungrounded_penalty
    if focus is not None and focus < cfg.answer_focus_ratio:
        deductions["off_focus"] = cfg.off_focus_penalty
    score = max(0.0, round(1.0 - sum(deductions.values()), 4))
    return QualityReport(score, deductions)


def _has_duplicate_sentences(answer: str) -> bool:
    seen: set[str] = set()
    for sentence in split_sentences(answer):
        key = re.sub(r"\W+", " ", CITATION_PATTERN.sub("", sentence).lower()).strip()
        if len(key) > 10 and key in seen:
            return True
        seen.add(key)
    return False


def _repeats_question(answer: str, question: str) -> bool:
    q = re.sub(r"\W+", " ", question.lower()).strip()
    return len(q) > 15 and q in re.sub(r"\W+", " ", answer.lower())


def best_supported_sentences(
    question: str,
    passages: Sequence[tuple[int, str]],
    limit: int,
    similarities: Callable[[str, list[str]], list[float]] | None = None,
) -> list[str]:
    """The context sentences that best answer the question, each with its [Source N] citation.

    The extractive last resort of the answer loop: ranked by ``similarities`` (embedding cosine
    of question vs sentence) when given, else by shared content words; ties keep reading order.
    """
    candidates = [
        (number, sentence)
        for number, text in passages
        for sentence in split_sentences(text)
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
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:limit]
    return [f"{candidates[i][1]} [Source {candidates[i][0]}]" for i in sorted(order)]


def answer_focus(
    answer: str,
    passages: Sequence[str],
    question: str,
    similarities: Callable[[str, list[str]], list[float]],
) -> float:
    """Does the answer come from the part of the context that answers the question?

    Each answer sentence is traced to the context sentence it overlaps most (its evidence). The
    focus is how relevant the best such evidence is to the question, relative to the most relevant
    context sentence: 1.0 when the answer rests on the best evidence, low when a grounded answer
    quotes a part of the context that does not answer the question (a title, another topic).
    """
    context = [s for text in passages for s in split_sentences(text) if len(content_words(s)) >= 2]
    answer_sentences = [s for s in split_sentences(answer) if content_words(s)]
    if not context or not answer_sentences:
        return 0.0
    relevance = list(similarities(question, context))
    best = max(relevance)
    if best <= 0:
        return 0.0
    evidence = []
    for sentence in answer_sentences:
        overlaps = [word_overlap(sentence, c) for c in context]
        evidence.append(relevance[max(range(len(context)), key=lambda i: (overlaps[i], relevance[i]))])
    return round(max(evidence) / best, 4)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
    return dot / norm if norm else 0.0
