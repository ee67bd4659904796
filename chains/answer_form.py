"""An accepted answer in the form a person can use: it starts at a sentence, reads as running text,
and cites every claim.

Quotes of PDF and Word text carry the page's layout with them: a letter's date and salutation glued
before the sentence that answers ("May 5, 2023 To Whom it May Concern: There were 200 laptops..."),
and line breaks where the page wrapped ("January 23, \\n2023."). A model's answer may leave a
sentence without its [Source N]. So, on a success only:

- a leading line or sentence that is no statement (a date alone, a salutation or sign-off ending in a
  colon or comma, a short title) is dropped while a statement follows it;
- a line break inside a sentence becomes a space (lists, tables and headings keep their lines);
- a sentence without a citation gets the one of the passage that says most of its words, when one
  says at least ``MIN_CITED_SHARE`` of them.

The fragment patterns are English and numeric dates; other languages keep their fragments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from keel.checks.answer_types import expected_answer_type, has_answer_of_type
from keel.core.text import CITATION_PATTERN, content_words, is_short_title, split_sentences

# A heading glued before an answer: a few words, no figures (a table row "Night shift: £2.00" is no title).
MAX_TITLE_WORDS = 5
# A sentence's content words a passage must say for its number to be added as the citation.
MIN_CITED_SHARE = 0.6
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_ONLY = re.compile(
    rf"^\s*(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    r"|\d{1,4}[./-]\d{1,2}[./-]\d{1,4})\s*\.?\s*$",
    re.IGNORECASE,
)
# A salutation or sign-off: a short line that hands over to what follows ("Dear Ms Holt,", "To Whom it
# May Concern:", "Best regards,").
_HANDOVER = re.compile(r"^[^.!?]{1,60}[:,]\s*$")
_STRUCTURED_LINE = re.compile(r"^\s*(?:#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\|)")


def is_fragment(text: str) -> bool:
    """A date alone, a salutation or sign-off, or a short title: a line that states nothing."""
    bare = CITATION_PATTERN.sub(" ", text).strip()
    if not bare:
        return True
    title = is_short_title(bare) and len(bare.split()) <= MAX_TITLE_WORDS and not re.search(r"[\d:]", bare)
    return bool(_DATE_ONLY.match(bare) or _HANDOVER.match(bare) or title)


def tidy_answer(answer: str, passages: Sequence[dict], question: str = "") -> str:
    """The answer from its first statement on, its wrapped lines joined, each sentence cited. A
    leading fragment that holds an answer of the type ``question`` asks for (the date for "when",
    the name for "who") is the answer, and stays."""
    kinds = expected_answer_type(question) if question else ()

    def droppable(text: str) -> bool:
        return is_fragment(text) and not (kinds and has_answer_of_type(text, kinds))

    paragraphs = [p for p in re.split(r"\n\s*\n", answer.strip()) if p.strip()]
    tidied = [_tidy_paragraph(p, droppable) for p in paragraphs]
    # a fragment before a list ("Children under 5 are covered for:") introduces it
    while len(tidied) > 1 and droppable(tidied[0]) and not _STRUCTURED_LINE.match(tidied[1]):
        tidied.pop(0)
    text = "\n\n".join(t for t in tidied if t)
    return _cite_every_sentence(text, passages) if passages else text


def _tidy_paragraph(paragraph: str, droppable) -> str:
    lines = [line.rstrip() for line in paragraph.splitlines() if line.strip()]
    if any(_STRUCTURED_LINE.match(line) for line in lines):
        return "\n".join(lines)  # a list, a table or a heading keeps its lines
    while len(lines) > 1 and droppable(lines[0]):
        lines.pop(0)
    joined = re.sub(r"[ \t]+", " ", " ".join(line.strip() for line in lines))
    sentences = split_sentences(_citations_inside(joined, droppable))
    while len(sentences) > 1 and droppable(sentences[0]):
        sentences.pop(0)
    return " ".join(sentences)


# "2023. [Source 1] A total": a citation after the stop that ends its sentence (a capital or the end follows)
_CITED_AFTER_STOP = re.compile(r"([.!?])\s*((?:\[\s*Source\s+\d+\s*\]\s*)+)(?=[A-Z]|$)")
# "May 5, 2023 [Source 1] A total": a fragment quoted with its citation before the statement
_CITED_FRAGMENT_FIRST = re.compile(r"^([^.!?\[]{1,60}?)\s*(\[\s*Source\s+\d+\s*\])\s+(?=[A-Z])")


def _citations_inside(text: str, droppable) -> str:
    """Each citation inside the sentence it cites: "2023. [Source 1] A total" -> "2023 [Source 1]. A
    total", and a leading fragment quoted with its citation ends its own sentence there."""
    text = _CITED_AFTER_STOP.sub(lambda m: f" {m.group(2).strip()}{m.group(1)} ", text)
    first = _CITED_FRAGMENT_FIRST.match(text)
    if first and droppable(first.group(1)):
        text = f"{first.group(1)} {first.group(2)}. {text[first.end():]}"
    return re.sub(r"\s+\.(?=\s|$)", ".", re.sub(r"[ \t]+", " ", text)).strip()


def _cite_every_sentence(text: str, passages: Sequence[dict]) -> str:
    if _STRUCTURED_LINE.search(text) or "\n" in text:
        return text  # structured answers are cited as the model wrote them
    sentences: list[str] = []
    for sentence in split_sentences(text):  # "... 2023. [Source 1]": the citation belongs to the sentence before
        if sentences and not CITATION_PATTERN.sub("", sentence).strip(" ."):
            sentences[-1] = f"{sentences[-1]} {sentence}"
        else:
            sentences.append(sentence)
    out = []
    for sentence in sentences:
        if not CITATION_PATTERN.search(sentence):
            number = _best_source(sentence, passages)
            if number is not None:
                sentence = _with_citation(sentence, number)
        out.append(sentence)
    return " ".join(out)


def _best_source(sentence: str, passages: Sequence[dict]) -> int | None:
    words = content_words(sentence)
    if not words:
        return None
    shares = [(len(words & content_words(p["text"])) / len(words), p["number"]) for p in passages]
    share, number = max(shares, default=(0.0, None))
    return number if share >= MIN_CITED_SHARE else None


def _with_citation(sentence: str, number: int) -> str:
    match = re.search(r"[.!?]+[\"')\]]*$", sentence)
    if match is None:
        return f"{sentence} [Source {number}]"
    return f"{sentence[:match.start()].rstrip()} [Source {number}]{sentence[match.start():]}"
