"""Five parsing layers, tried in order: find the user-facing answer in whatever the model wrote.

    1 xml           <answer>...</answer> (an unclosed tag runs to the end), or the text after </thinking>
    2 json          an object with an "answer" key, found with a real JSON decoder (nested braces work)
    3 final_answer  the text after the last "Final Answer:"
    4 regex         the raw text with known artifacts cleaned away
    5 raw           the raw text as it is, with an error recorded (``ParsedAnswer.error``)

The input is capped first (``max_chars``), and whatever layer wins, reasoning markers are stripped
from its text, so a leak inside the answer tags is removed too.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from keel.checks.reasoning_filter import strip_reasoning
from keel.core.settings.quality import QualitySettings

log = logging.getLogger("keel.parser")

MAX_PARSE_CHARS = QualitySettings.max_parse_chars  # the default only: callers pass cfg.max_parse_chars
LAYERS = ("xml", "json", "final_answer", "regex", "raw")

_ANSWER_BLOCK = re.compile(r"<answer>(.*?)(?:</answer>|(?=<answer>)|$)", re.S | re.I)
_THINKING_END = re.compile(r"</(?:thinking|think|reasoning)>", re.I)
_FINAL_ANSWER = re.compile(r"final\s+answer\s*:\s*", re.I)
LEAD_IN = re.compile(r"^\s*((the\s+)?(final\s+)?answer(\s+is)?|response)\s*:\s*", re.I)
# Tags a small model writes that are not the answer: the prompt's data delimiters echoed back, and a
# wrapper of its own in place of <answer>. Removed from an answer here; an answer holding them is
# also marked as having artifacts (keel/checks/answer_checks.py).
ECHOED_TAGS = (
    re.compile(r"</?documents?\b[^>]{0,80}>", re.I),
    re.compile(r"</?(?:response|reply|output)>", re.I),
)
# Layer 4: leaked-reasoning artifacts removed by the regex layer (the reasoning filter handles the rest).
_SEED_ARTIFACTS = (
    re.compile(r"^\s*based\s+on\s+the\s+analysis\s+of\s+[^:\n]{0,200}?:\s*", re.I),
    re.compile(r"\(\s*in\s+the\s+context\s+of\s+[^)]*\)", re.I),
    re.compile(r"(?m)^\s*(?:user|assistant|system)\s*:\s*"),
    *ECHOED_TAGS,
)


@dataclass
class ParsedAnswer:
    """The answer found in the model's output, which parsing layer found it, and what went wrong."""
    text: str
    layer: str
    error: str | None = None


def parse_answer(raw: str, max_chars: int = MAX_PARSE_CHARS, ignore: Iterable[str] = ()) -> ParsedAnswer:
    """The answer in ``raw``, by the first layer that finds one. ``ignore``: answers that are only
    copies of the prompt's few-shot examples, skipped when the model echoes them."""
    raw = (raw or "")[:max_chars]
    skipped = {_key(text) for text in ignore}
    for layer, finder in (("xml", _from_tags), ("json", _from_json), ("final_answer", _from_final_marker)):
        found = finder(raw, skipped)
        if found is not None:
            text = tidy(found)
            if text:
                return ParsedAnswer(text, layer)
    cleaned = _clean(raw)
    if cleaned and cleaned != raw.strip():
        return ParsedAnswer(tidy(cleaned), "regex")
    if raw.strip():
        error = "All parsing strategies failed: no answer tags, JSON or Final Answer; using the raw response"
        # With a small model the raw layer is an ordinary path, not a fault: the attempt's telemetry
        # record counts it (parse_layer "raw", parse_error), so the log stays quiet about it.
        log.debug("%s (%d chars)", error, len(raw))
        return ParsedAnswer(tidy(raw), "raw", error)
    return ParsedAnswer("", "raw", "empty response")


def tidy(text: str) -> str:
    """Strip reasoning markers, answer tags and lead-ins such as "The answer is:"."""
    return LEAD_IN.sub("", strip_reasoning(text)).strip()


def _key(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def _from_tags(raw: str, skipped: set[str]) -> str | None:
    for match in _ANSWER_BLOCK.finditer(raw):
        text = match.group(1).strip()
        if text and _key(tidy(text)) not in skipped:
            return text
    ends = list(_THINKING_END.finditer(raw))
    if ends and raw[ends[-1].end():].strip():
        return raw[ends[-1].end():]
    return None


def _from_json(raw: str, skipped: set[str]) -> str | None:
    """Scan every '{' with a real JSON decoder, so nested objects and braces inside strings work."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", raw):
        try:
            value, _ = decoder.raw_decode(raw[match.start():])
        except ValueError:
            continue
        answer = _answer_key(value)
        if answer and _key(answer) not in skipped:
            return answer
    return None


def _answer_key(value: Any, depth: int = 0) -> str | None:
    if not isinstance(value, dict) or depth > 4:
        return None
    for key, item in value.items():
        if str(key).lower() in ("answer", "final_answer") and isinstance(item, (str, int, float)):
            return str(item)
    for item in value.values():
        nested = _answer_key(item, depth + 1)
        if nested:
            return nested
    return None


def _from_final_marker(raw: str, skipped: set[str]) -> str | None:
    markers = list(_FINAL_ANSWER.finditer(raw))
    if not markers:
        return None
    text = raw[markers[-1].end():].strip()
    return text if _key(text) not in skipped else None


def _clean(raw: str) -> str:
    """Layer 4: the artifact regexes, the reasoning filter, and duplicate sentences dropped."""
    cleaned = raw
    for pattern in _SEED_ARTIFACTS:
        cleaned = pattern.sub(" ", cleaned)
    cleaned = strip_reasoning(cleaned)
    sentences = re.split(r"(?<=[.!?])\s+", cleaned)
    seen: set[str] = set()
    unique = []
    for sentence in sentences:
        key = _key(sentence)
        if key and key in seen:
            continue
        seen.add(key)
        unique.append(sentence)
    return " ".join(unique).strip() if len(unique) < len(sentences) else cleaned.strip()
