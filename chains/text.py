"""Text utilities the answer checks share: sentences, content words, citations."""

from __future__ import annotations

import re

CITATION_PATTERN = re.compile(r"\[\s*Source\s+(\d+)\s*\]", re.I)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
WORD = re.compile(r"[\w'-]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an the of to in on at for by with and or but is are was were be been it its this that these those "
    "as from into than then so such not no yes do does did has have had i you he she we they".split()
)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_SPLIT.split(text.strip()) if s.strip()]


def content_words(text: str) -> set[str]:
    words = {w.lower() for w in WORD.findall(CITATION_PATTERN.sub(" ", text))}
    return {w for w in words if w not in STOPWORDS}


def cited_sources(answer: str) -> list[int]:
    return sorted({int(n) for n in CITATION_PATTERN.findall(answer)})
