"""Pure checks on a generated answer: parsing, quality score, grounding, citations, extraction.

No I/O here: every function receives the text and passages it needs, so each is easy to test.
Issue-level depth (seed 001's full parser, seed 004's layers) grows in this module's siblings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from chains.text import CITATION_PATTERN, content_words, split_sentences
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
