"""Text utilities the answer checks share: sentences, content words, citations."""

from __future__ import annotations

import re
from collections.abc import Sequence

CITATION_PATTERN = re.compile(r"\[\s*Source\s+(\d+)\s*\]", re.I)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
WORD = re.compile(r"[\w'-]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an the of to in on at for by with and or but is are was were be been it its this that these those "
    "as from into than then so such not no yes do does did has have had i you he she we they".split()
)


# A model / product / error code: letters and digits in one token, e.g. ZR-200, AX3000, V20, E4.
CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")
# Tokens with letters and digits that are not codes: ordinals, decades, and figures with a unit.
NOT_A_CODE = re.compile(
    r"^\d+(?:st|nd|rd|th|s|x|k|m|b|bn|kg|g|mg|lb|lbs|mm|cm|m|km|h|hrs?|min|s|ms|gb|mb|kb|tb|w|kw|kwh|v|mah|wh|hz|khz|mhz|ghz|"
    r"am|pm|p|fps|dpi|mbps|gbps)$", re.I)


def codes_as_written(text: str) -> list[str]:
    """The model / product codes a text names, as written, in order ("ZR-200", "AX3000")."""
    return list(dict.fromkeys(m.group() for m in CODE.finditer(text) if not NOT_A_CODE.match(m.group())))


# A number as written, whole: "20,000" is one figure (20000), never a "20" and a "000".
_FIGURE = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")


def figures_in_order(text: str) -> list[str]:
    """The numbers a text states, as ``figures`` gives them, in reading order (codes are not numbers)."""
    return [m.group().replace(",", "").rstrip(".") for m in _FIGURE.finditer(without_codes(text))]


def figures(text: str) -> set[str]:
    """The numbers a text states, without citation numbers, product codes or thousands separators."""
    return set(figures_in_order(CITATION_PATTERN.sub(" ", text)))


# A figure with the unit it counts: "2 years", "14 business days", "3.4 kg", "€299" is not one (no unit word).
_UNIT_ALIASES = {"sec": "second", "secs": "second", "min": "minute", "mins": "minute", "hr": "hour", "hrs": "hour",
                 "h": "hour", "yr": "year", "yrs": "year", "metre": "m", "meter": "m", "kilogram": "kg",
                 "gram": "g", "litre": "l", "liter": "l", "euro": "eur"}
_QUANTITY = re.compile(
    r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(?:(?:business|working|calendar|banking|full|charge)\s+){0,2}"
    r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?|yrs?|mm|cm|m|km|metres?|"
    r"meters?|kg|kilograms?|g|grams?|lbs?|ml|l|litres?|liters?|euros?|eur|dollars?|usd|pa|db|cycles?|gbps|mbps)\b",
    re.I)


def quantities(text: str) -> set[tuple[str, str]]:
    """The (figure, unit) pairs a text states: "within 2 years" gives ("2", "year"). The same number
    counts different things in different lines ("2 years" of warranty, "wait 2 minutes")."""
    found = set()
    for match in _QUANTITY.finditer(without_codes(CITATION_PATTERN.sub(" ", text))):
        unit = match.group(2).lower()
        unit = _UNIT_ALIASES.get(unit, unit if len(unit) <= 3 else unit.rstrip("s"))
        found.add((match.group(1).replace(",", "").rstrip("."), _UNIT_ALIASES.get(unit, unit)))
    return found


def without_codes(text: str) -> str:
    """The text with its model / product codes blanked: "ZR-200" holds no count of anything."""
    for code in codes_as_written(text):
        text = text.replace(code, " ")
    return text


_PROPER_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def exact_terms(question: str) -> list[str]:
    """What a question names that a search should match word for word: its codes ("ZR-200") and
    proper names ("Rollo", "Charles the Simple" as "Charles", "Simple"), not its opening word."""
    rest = question.split(None, 1)[1] if len(question.split(None, 1)) > 1 else ""
    return list(dict.fromkeys([*codes_as_written(question), *_PROPER_NAME.findall(rest)]))


def split_sentences(text: str) -> list[str]:
    """The text's sentences, stripped, empty ones left out."""
    return [s.strip() for s in SENTENCE_SPLIT.split(text.strip()) if s.strip()]


# A line that begins a new statement whether or not a full stop ends the line before it: a heading,
# a list item, a table row, a bold lead-in ("**Vela V25:** the robot, ...").
_BLOCK_START = re.compile(r"^\s*(?:#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||\*\*)|\S\s\|\s\S")
# Headings (Markdown or a bold line) and table rows end where their line does.
_SELF_CONTAINED = re.compile(r"^\s*#{1,6}\s|\S\s\|\s\S|^\s*\||^\s*\*\*[^*]+\*\*\s*$")
_ENDS_CLAUSE = (".", "!", "?", ":", ";", ",")


def is_short_title(line: str) -> bool:
    """A line of at most eight words without closing punctuation: what a plain heading looks like."""
    stripped = line.strip().strip("|").strip()
    return 0 < len(stripped.split()) <= 8 and not stripped.endswith(_ENDS_CLAUSE)


def _is_title_line(line: str, following: str) -> bool:
    """A short title line followed by a line that starts a sentence: a plain heading (as Word and PDF
    text has them), not a sentence wrapped at the line's end."""
    return is_short_title(line) and following.lstrip()[:1].isupper()


def split_statements(text: str) -> list[str]:
    """Sentences, where a paragraph break, a heading, a list item or a table row also ends one: a
    spec table or a list is one statement per row, not one long "sentence" without full stops."""
    return [sentence for block in statement_blocks(text) for sentence in block]


def statement_blocks(text: str) -> list[list[str]]:
    """``split_statements``' sentences grouped by the block they are in: a list item, a table row, a
    heading, or the run of a paragraph's lines between them."""
    blocks: list[list[str]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        closed, previous = True, ""
        for line in paragraph.splitlines():
            if not line.strip():
                continue
            if closed or _BLOCK_START.search(line) or _is_title_line(previous, line):
                blocks.append([])
            blocks[-1].append(line)
            closed, previous = bool(_SELF_CONTAINED.search(line)), line
    return [split_sentences("\n".join(block)) for block in blocks]


def without_sentences(text: str, drop: Sequence[str]) -> str:
    """The text without the given sentences (as split_sentences found them), spacing tidied."""
    for sentence in drop:
        text = text.replace(sentence, " ", 1)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"\n{3,}", "\n\n", text)).strip()


def content_words(text: str) -> set[str]:
    """The text's words that say something (no stop words, no citations), lower-cased."""
    words = {w.lower() for w in WORD.findall(CITATION_PATTERN.sub(" ", text))}
    return {w for w in words if w not in STOPWORDS}


def cited_sources(answer: str) -> list[int]:
    """The [Source N] numbers an answer cites, sorted, each once."""
    return sorted({int(n) for n in CITATION_PATTERN.findall(answer)})


SECTION_MARKER = re.compile(r"\[\s*(CITATIONS?|ANSWER|EXPLANATION)\s*\]\s*:?", re.I)


def parse_sections(text: str) -> dict[str, str] | None:
    """The optional sectioned reply ([CITATION] / [ANSWER] / [EXPLANATION]), split into its fields.

    None when there is no [ANSWER] section (the model ignored the format: the text stays the answer).
    """
    markers = list(SECTION_MARKER.finditer(text))
    fields = {"citation": "", "answer": "", "explanation": ""}
    for index, marker in enumerate(markers):
        end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
        name = marker.group(1).lower().rstrip("s")
        fields[name] = fields[name] or text[marker.end():end].strip()
    return fields if fields["answer"] else None


def with_section_citations(sections: dict[str, str]) -> str:
    """The [ANSWER] text, with the [CITATION] section's [Source N] appended when the answer cites none,
    so that the sources under the answer still match what the model said it used."""
    answer = sections["answer"]
    if cited_sources(answer):
        return answer
    cited = cited_sources(sections.get("citation", ""))
    return f"{answer} {' '.join(f'[Source {n}]' for n in cited)}".strip()


def strip_instructions(text: str, patterns: Sequence[str]) -> tuple[str, int]:
    """The text without its sentences that match an injection pattern, and how many were removed.
    Unchanged (same string) when none matches."""
    compiled = [re.compile(p, re.I) for p in patterns]
    sentences = split_sentences(text)
    kept = [s for s in sentences if not any(p.search(s) for p in compiled)]
    if len(kept) == len(sentences):
        return text, 0
    return " ".join(kept), len(sentences) - len(kept)


def remove_markers(text: str, markers: Sequence[str]) -> str:
    """The text without the prompt's own delimiters, so a passage cannot close the data block."""
    for marker in markers:
        text = re.sub(re.escape(marker), " ", text, flags=re.I)
    return text


def content_text(content) -> str:
    """A chat message's text: its content, or the text parts of a list of content blocks (pictures
    and other blocks have none)."""
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
