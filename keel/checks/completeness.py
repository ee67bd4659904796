"""Is a generated answer finished, or was it cut off mid-thought and in need of a continuation?

Hard signs mean cut off whatever the model says: a trailing comma, semicolon, colon, conjunction
or article, a continuation word ("next", "then", "finally", "also", "additionally"), an unfinished
numbered list. Soft signs (no end punctuation, a last sentence without structure) count only when
the model did not close the answer itself: a short factoid in closed <answer> tags ("Mara Holt")
is complete, the same words cut off by the token limit are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from keel.checks.structure import extract_structure
from keel.core.text import CITATION_PATTERN

TRAILING_JOINERS = re.compile(
    r"(,|;|:|\u2014|-|\b(and|or|but|nor|with|for|to|the|a|an|of|in|on|at|by|from|as|that|which|who|is|are|was|"
    r"were|because|such as|including|e\.g\.|i\.e\.))\s*$",
    re.I,
)
CONTINUATION_WORDS = re.compile(r"\b(next|then|finally|also|additionally|furthermore|moreover|firstly|secondly)\s*[,:]?\s*$", re.I)
END_PUNCTUATION = re.compile(r"([.!?\u3002\uff01\uff1f]['\"\u201d\u2019)\]]*|```)\s*$")
OPEN_BRACKETS = (("(", ")"), ("[", "]"), ("\u201c", "\u201d"))
VERBISH = re.compile(
    r"\b(is|are|was|were|be|been|has|have|had|do|does|did|can|could|will|would|should|may|might|must|"
    r"\w+(ed|es|s|ing))\b",
    re.I,
)


@dataclass
class CompletenessReport:
    """Whether an answer reads as finished, and why not (what continuation acts on)."""
    complete: bool
    reasons: list[str] = field(default_factory=list)


def assess_completeness(text: str, closed: bool = False) -> CompletenessReport:
    """Why ``text`` looks cut off (empty reasons: complete). ``closed``: the model ended the answer
    itself (an </answer> tag or its own end-of-sequence), so only hard signs count."""
    body = CITATION_PATTERN.sub("", re.sub(r"</?answer>", "", text or "", flags=re.I)).rstrip()
    if not body.strip():
        return CompletenessReport(False, ["empty"])
    reasons: list[str] = []
    if TRAILING_JOINERS.search(body):
        reasons.append("trailing_joiner")
    if CONTINUATION_WORDS.search(body):
        reasons.append("continuation_word")
    if any(body.count(o) > body.count(c) for o, c in OPEN_BRACKETS) or body.count("```") % 2:
        reasons.append("open_bracket")
    structure = extract_structure(body)
    if structure.list_unfinished:
        reasons.append("unfinished_list")
    if not closed:
        if not END_PUNCTUATION.search(body):
            reasons.append("no_end_punctuation")
        elif not _has_structure(_last_sentence(body)):
            reasons.append("last_sentence_without_structure")
    return CompletenessReport(not reasons, reasons)


def looks_complete(text: str, closed: bool = False) -> bool:
    """Whether ``text`` reads as a finished answer (a closing </answer> tag counts as finished)."""
    if re.search(r"</answer>\s*$", text or "", re.I):
        closed = True
    return assess_completeness(text, closed).complete


def _last_sentence(text: str) -> str:
    parts = [p for p in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if p.strip()]
    return parts[-1] if parts else ""


def _has_structure(sentence: str) -> bool:
    """A finished last sentence has a subject, verb and object; checked cheaply: a list item, a
    short label, a number, or
    three or more words with something verb-like."""
    words = re.findall(r"[\w'-]+", sentence)
    if re.match(r"^\s*(\d+[.)]|[-*\u2022])\s+", sentence) or len(words) <= 3:
        return True
    return bool(VERBISH.search(sentence))


def trim_to_complete(text: str) -> str:
    """The longest prefix that ends a sentence (the last resort when the limits stop continuation);
    the text itself when no sentence ends in it."""
    body = text.rstrip()
    ends = [m.end() for m in re.finditer(r"[.!?](?:['\"\u201d\u2019)\]]|\s*\[Source \d+\])*(?=\s|$)", body)]
    for end in reversed(ends):
        candidate = body[:end].rstrip()
        if assess_completeness(candidate, closed=True).complete:
            return candidate
    return body
