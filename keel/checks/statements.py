"""The statements of a context: each sentence, table row or list item with the entities (model and
product codes) it is about and the headings above it. The answer-fit checks ask of them whether an
answer's figures were stated about the entity the question names, and the extractive answer which
statement to quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from keel.core.text import (
    CITATION_PATTERN,
    CODE,
    NOT_A_CODE,
    codes_as_written,
    figures,
    figures_in_order,
    is_short_title,
    quantities,
    statement_blocks,
)

# A Markdown heading, a bold line, or a plain-text title in capitals of two to eight words and no
# figures ("DISCOUNT CODES", "WHEN WILL MY ORDER SHIP?"; not "FAQ", "USB-C" or "RETURNS WITHIN 30
# DAYS"): each names what follows and answers nothing itself.
HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*\s*$|[A-Z][A-Z&'’/-]*(?:,?\s+[A-Z&][A-Z&'’/-]*){1,7}[?:]?\s*$)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s)")


def entity_codes(text: str) -> set[str]:
    """The model / product codes a text names, normalised ("ZR 200", "zr-200" → "zr200")."""
    return {_normalised(code) for code in codes_as_written(text)}


@dataclass(frozen=True)
class Statement:
    """A sentence (or table row) of the context, the entities it is about, and the headings above it."""

    text: str
    entities: frozenset[str]
    headings: str = ""
    # of a sentence naming several entities, which of them each figure is stated about
    figure_owners: tuple[tuple[str, frozenset[str]], ...] = field(default=(), compare=False)
    unit: str = field(default="", compare=False)  # the whole sentence or row a table cell's statement is of
    numbers: frozenset[str] = field(default=frozenset(), compare=False)  # its figures, read once
    counts: frozenset[tuple[str, str]] = field(default=frozenset(), compare=False)  # (figure, unit), read once
    # what its list item said before it, when it goes on from there: "- Standard delivery is free
    # over EUR 50. Below EUR 50 it costs EUR 4.95." prices standard delivery in both sentences
    item: str = field(default="", compare=False)
    section: str = field(default="", compare=False)  # the nearest heading above it
    heading_lines: tuple[str, ...] = field(default=(), compare=False)  # the headings above it, each whole

    @property
    def setting(self) -> str:
        """What a reader has in mind on reaching the statement: the headings above it and its list item's lead."""
        return f"{self.headings} {self.item}".strip()

    def owners_of(self, figure: str) -> frozenset[str]:
        """The entities this statement states the figure about."""
        return dict(self.figure_owners).get(figure, self.entities)


def statements(passages: Iterable[str]) -> list[Statement]:
    """Every sentence of the passages with its entity: the codes it names, else the codes named
    earlier in its paragraph, else those of the heading (or short title line) above it."""
    found: list[Statement] = []
    for passage in passages:
        heading: frozenset[str] = frozenset()
        path: dict[int, str] = {}  # heading level → heading text, the passage's title first
        for paragraph in re.split(r"\n\s*\n", passage):
            current = heading
            for sentence, item in _with_items(paragraph):  # a sentence wrapped over lines stays whole
                own = frozenset(entity_codes(sentence))
                level = _heading_level(sentence)
                if level:
                    path = {depth: text for depth, text in path.items() if depth < level} | {level: sentence}
                if own and (level or is_short_title(sentence)):
                    heading = own
                headings = " ".join(path.values())
                by_entity = cells_by_entity(sentence)
                if by_entity:  # a table row comparing entities: each value is a statement about its column's
                    found.extend(Statement(cell.text, cell.entities, headings, unit=sentence,
                                           numbers=frozenset(figures(cell.text)), counts=frozenset(quantities(cell.text)),
                                           heading_lines=tuple(path.values()))
                                 for cell in by_entity)
                    continue
                if own:
                    current = own
                found.append(Statement(sentence, own or current, headings, _figure_owners(sentence), sentence,
                                       frozenset(figures(sentence)), frozenset(quantities(sentence)), item,
                                       path[max(path)] if path else "", tuple(path.values())))
    return found


def _with_items(paragraph: str) -> list[tuple[str, str]]:
    """Each statement of the paragraph with what its list item said before it, where it goes on
    from there without a subject of its own ("Below EUR 50 it costs EUR 4.95."); "" otherwise:
    "Express delivery costs EUR 9.90." names its own subject, even in the standard delivery's item."""
    found = []
    for block in statement_blocks(paragraph):
        in_item = bool(block) and (LIST_ITEM.match(block[0]) or _NUMBERED.match(block[0]))
        for index, sentence in enumerate(block):
            goes_on = in_item and index > 0 and _CONTINUES.match(sentence)
            found.append((sentence, " ".join(block[:index]) if goes_on else ""))
    return found


# A list item's number split off as a sentence of its own ("1."), and a sentence that goes on from
# the one before it in its item rather than naming its subject.
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s*$")
_CONTINUES = re.compile(r"^\W*(?:below|above|under|over|up to|beyond|it|its|this|that|these|those|they|then|"
                        r"otherwise|if so|if not|except|unless|in that case)\b", re.I)


def _figure_owners(sentence: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """In a sentence naming several entities, which figure is whose. Named first, each entity owns
    the figures that follow it: "the V20 runs for 70 minutes and the V25 for 95 minutes" gives 70
    to the V20 and 95 to the V25, "the V20 and V25 both weigh 3 kg" 3 to both. Figure first (no
    entity before the first figure, entities after the last), each figure belongs to the entities
    that follow it: "2 years for the V20 and the AX3000, 3 years for the V25". A figure with no
    entity on its side is the whole sentence's."""
    codes = [(m.start(), m.end(), _normalised(m.group())) for m in CODE.finditer(sentence)
             if not NOT_A_CODE.match(m.group())]
    every = frozenset(code for _, _, code in codes)
    if len(every) < 2:
        return ()
    # The figures between one entity and the next, in reading order, and the entities around them.
    spans: list[tuple[list[str], set[str]]] = []
    position, named = 0, set()
    for start, end, code in [*codes, (len(sentence), 0, "")]:
        between = figures_in_order(CITATION_PATTERN.sub(" ", sentence[position:start]))
        if between:
            spans.append((between, named))
            named = set()
        if code:
            named.add(code)
        position = max(position, end)
    trailing = named  # the entities after the last figure
    # Figure first only when no entity precedes the first figure and the sentence ends on entities:
    # "In 2023 the V20 ran 70 minutes and the V25 95" opens on a year, not on a figure for the V20.
    figure_first = bool(spans) and bool(trailing) and not spans[0][1]
    owners: dict[str, set[str]] = {}
    for index, (found, before) in enumerate(spans):
        after = spans[index + 1][1] if index + 1 < len(spans) else trailing
        side = after if figure_first else before
        for figure in found:
            owners.setdefault(figure, set()).update(side or every)
    return tuple((figure, frozenset(codes)) for figure, codes in owners.items())


def _normalised(code: str) -> str:
    return re.sub(r"[\s-]", "", code).lower()


def _heading_level(sentence: str) -> int:
    """1-6 for a Markdown heading, 7 for a bold line (a heading below those), else 0."""
    marks = re.match(r"^\s*(#{1,6})\s", sentence)
    if marks:
        return len(marks.group(1))
    return 7 if HEADING.match(sentence) else 0


# A table row as the loaders write it: ``column: value`` cells joined by " | ".
_ROW_CELL = re.compile(r"^([^:|]{1,80}):\s(.*)$")


def cells_by_entity(line: str) -> list[Statement]:
    """A row such as ``Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg`` as one
    statement per entity column (with the row's other cells as its label), or [] for any other
    line: the row names both models, but 3.9 kg is stated about the V25 only."""
    cells = [_ROW_CELL.match(cell.strip()) for cell in line.split(" | ")]
    if len(cells) < 3 or not all(cells):
        return []
    labels, columns = [], []
    for cell in cells:
        codes = frozenset(entity_codes(cell.group(1)))
        (columns if codes and not entity_codes(cell.group(2)) else labels).append((cell.group(0), codes))
    if len({codes for _, codes in columns}) < 2:
        return []
    label = " | ".join(text for text, _ in labels)
    return [Statement(f"{label} | {text}" if label else text, codes) for text, codes in columns]


# A statement that names its attribute: "Weight: 3.4 kg", "- **Express delivery:** 1-2 days", a table row.
_LABEL = re.compile(r"^\s*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?(?:\*\*)?([^:|.*]{1,60}?)(?:\*\*)?\s*:(?:\*\*)?\s")


def is_labelled(sentence: str) -> bool:
    """Does the statement name the attribute its value is of (a table row, a "Label: value" line)?
    Its label is then what it is about, so a question about another attribute is not answered by it."""
    label = _LABEL.match(sentence)
    return bool(label) and len(label.group(1).split()) <= 6


def under_headings(context: Iterable[Statement]) -> dict[str, str]:
    """Each sentence or row of the context with the headings above it prefixed, as a reader sees it:
    "- Restart: hold the power button for 10 seconds" is about restarting a Vela vacuum."""
    return {statement.unit: " ".join(f"{re.sub(r'[#*]', '', statement.headings)} {statement.unit}".split())
            for statement in context if statement.unit}


def owners_by_figure(context: Iterable[Statement]) -> dict[str | tuple[str, str], list[frozenset[str]]]:
    """Each figure of the context with the entities of every statement that states it, and each
    (figure, unit) pair with those of the statements that state it in that unit."""
    owners: dict[str | tuple[str, str], list[frozenset[str]]] = {}
    for statement in context:
        for figure in statement.numbers:
            owners.setdefault(figure, []).append(statement.owners_of(figure))
        for figure, unit in statement.counts:
            owners.setdefault((figure, unit), []).append(statement.owners_of(figure))
    return owners


def by_text(context: Iterable[Statement]) -> dict[str, list[Statement]]:
    """The statements a sentence or row of the context (or a quoted table cell) stands for."""
    found: dict[str, list[Statement]] = {}
    for statement in context:
        for key in {statement.text, statement.unit} - {""}:
            found.setdefault(key, []).append(statement)
    return found


def statements_for(context: Sequence[Statement]) -> Callable[[str], list[Statement]]:
    """The statements a sentence of the context stands for, however it was split: a sentence cut
    at full stops may hold a list's items, or be one of a row's cells."""
    found = by_text(context)
    return lambda sentence: found.get(sentence) or [s for s in context if s.text in sentence or sentence in s.text]
