"""Does the answer fit the question? Checks for answers that are grounded but wrong.

Grounding says every sentence of an answer is in the documents; it cannot say the sentence is
about what was asked. A product guide with two look-alike models, or a policy full of numbers,
lets a small model quote the wrong line word for word: "How much does the ZR-200 cost?" answered
with the ZR-500's price, "How long is the warranty?" answered with a year. Three checks catch that
class before an answer is shown, each a pure function of the question, the answer and the passages:

- **answer type**: "how long" wants a duration, "how much does it cost" an amount of money,
  "how many" a number, "who" a name, "when" a date or time (``expected_answer_type``);
- **focus entity**: when the question names a model or code ("ZR-200", "AX3000"), every figure
  in the answer must come from a statement about that entity, not a neighbouring one's
  (``figures_from_other_entities``): a statement's entity is the one it names, or else the one
  named earlier in its paragraph or in the heading above it; a table row comparing models states
  each value about its column's model, and a sentence naming two each figure about the one named
  just before it (keel/checks/statements.py);
- **addresses the question**: the answer, with the context sentences it rests on, must share
  a content word with the question beyond its question words (``addresses_question``): "Who is the
  chief executive?" is not answered by a sentence about the annual report.

The extractive last attempt uses the same rules to choose its sentence (``sentence_fits``), and
quotes it only when it says enough of what the question is about (``question_coverage``).
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from keel.checks.grounding import stems, word_overlap
from keel.checks.statements import (  # noqa: F401 (statements and entity_codes re-exported)
    HEADING, Statement, by_text, cells_by_entity, entity_codes, is_labelled, owners_by_figure, statements,
)
from keel.core.settings.grounding import GroundingSettings
from keel.core.text import CITATION_PATTERN, content_words, figures, split_sentences, split_statements, without_codes

ANSWER_TYPE_MISMATCH = "answer_type_mismatch"
WRONG_ENTITY = "wrong_entity"
OFF_QUESTION = "does_not_address_question"
UNBOUND_FIGURE = "figure_from_another_statement"

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|"
    "seventy|eighty|ninety|hundred|thousand|million|billion|dozen|several|a few|half an?"
)
_NUMBER = rf"(?:\d[\d,.]*|\b(?:{_NUMBER_WORDS})\b)"
_DURATION_UNITS = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?|yrs?|decades?|centur(?:y|ies))"
_LENGTH_UNITS = r"(?:mm|cm|m|km|metres?|meters?|kilomet(?:er|re)s?|centimet(?:er|re)s?|millimet(?:er|re)s?|inch(?:es)?|in|feet|foot|ft|miles?|yards?)"
_WEIGHT_UNITS = r"(?:kg|kilograms?|kilos?|g|grams?|lbs?|pounds?|tons?|tonnes?|t|oz|ounces?)"
_MONEY = (
    r"(?:[$€£¥₹]\s?\d|\d[\d,.]*\s?(?:[$€£¥₹]|euros?|eur|dollars?|usd|gbp|pounds?|cents?|francs?|yen|yuan|rupees?|"
    r"kronor|kroner|krona|crowns?)\b|\b(?:free of charge|free|no charge|no cost|at no extra cost)\b)"
)
_UNIT_WORDS = frozenset(
    "second seconds sec secs minute minutes min mins hour hours hrs day days night nights week weeks month months "
    "year years decade decades mm cm m km metre metres meter meters inch inches feet foot ft mile miles kg kilogram "
    "kilograms kilo kilos g gram grams lb lbs pound pounds ton tons tonne tonnes oz euro euros eur dollar dollars usd "
    "cent cents percent per business working calendar about up around approximately only least most over under "
    "within after before until from than more less".split()
)
_MONTHS = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?)"

# What an answer of each type contains (searched case-insensitively).
ANSWER_PATTERNS: dict[str, re.Pattern] = {
    "duration": re.compile(
        rf"{_NUMBER}\s*(?:-|–|to|or)?\s*(?:\d[\d,.]*\s*)?(?:business\s+|working\s+|calendar\s+)?{_DURATION_UNITS}\b"
        r"|\b(?:lifetime|overnight|indefinitely|permanently)\b", re.I),
    "length": re.compile(rf"{_NUMBER}\s*(?:-|–|to)?\s*{_LENGTH_UNITS}\b", re.I),
    "money": re.compile(_MONEY, re.I),
    "weight": re.compile(rf"{_NUMBER}\s*(?:-|–|to)?\s*(?:\d[\d,.]*\s*)?{_WEIGHT_UNITS}\b", re.I),
    "percentage": re.compile(rf"{_NUMBER}\s*(?:%|per\s?cent|percent)", re.I),
    "count": re.compile(rf"{_NUMBER}|\b(?:none|no|all|every|each|both|single|once|twice)\b", re.I),
    "time": re.compile(
        rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}})s?\b|\b{_MONTHS}\b|\b{_WEEKDAYS}\b|\b\d{{1,2}}[:.]\d{{2}}\b|\b\d{{1,2}}\s*(?:am|pm|a\.m\.|p\.m\.)"
        rf"|\b(?:centur(?:y|ies)|today|tomorrow|yesterday|daily|weekly|monthly|annually|hours?|morning|evening|noon|midnight|"
        rf"before|after|within|until|during|when|once|immediately|ago)\b|{_NUMBER}\s*{_DURATION_UNITS}\b", re.I),
    "clock": re.compile(rf"\b\d{{1,2}}(?:[:.]\d{{2}})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock|h\b)|\b\d{{1,2}}:\d{{2}}\b"
                        rf"|\b(?:noon|midday|midnight|24/7|around the clock|all day)\b|\b\d{{1,2}}\s+{_MONTHS}\b|\b{_MONTHS}\s+\d{{1,2}}\b"
                        rf"|\b(?:1[0-9]{{3}}|20[0-9]{{2}})\b", re.I),
    "name": re.compile(r"(?:^|[^.!?]\s)(?:[A-Z][\w'’-]+|[A-Z]\.)|\b(?:team|department|staff|office|desk|manager|"
                       r"officer|director|agent|technician|engineer|support|company|customer|owner|user|you)\b"),
}
# Which type a question asks for: the first matching rule wins (searched case-insensitively).
QUESTION_TYPES: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.I), kinds) for pattern, kinds in (
        (r"\b(?:what|which)\s+(?:percent|percentage|share|proportion)\b|\bhow much\b.*\b(?:percent|percentage)\b", ("percentage",)),
        (r"\bhow much\b.*\b(?:cost|costs|price|pay|charge|charged|fee|fees|spend|worth|refund(?:ed)?)\b"
         r"|\b(?:what|which)\s+(?:is|was|are)\s+the\s+(?:price|cost|fee|charge)s?\b", ("money",)),
        (r"\bhow heavy\b|\bhow much\b.*\b(?:weigh|weight)\b|\bwhat\s+(?:is|does)\b.*\bweigh", ("weight",)),
        (r"\bhow (?:long|far|tall|wide|high|deep)\b.*\b(?:cable|cord|hose|distance|range|reach|size|dimension)s?\b", ("length",)),
        # "how long does it run / take / last" asks for a duration; "how long is the hose" may not
        (r"\bhow long\s+(?:does|do|did|will|would|can|could|must|should|has|have|had)\b", ("duration",)),
        (r"\bhow long\b", ("duration", "length")),
        (r"\bhow (?:far|tall|wide|high|deep)\b", ("length",)),
        (r"\bhow many\b", ("count",)),
        # "When does the clinic open?" wants the hour (or the date), not only "on weekdays".
        (r"^\W*(?:when|what time)\b.*\b(?:open|opens|close|closes|start|starts|begin|begins|leave|leaves|depart|departs|"
         r"arrive|arrives)\b", ("clock",)),
        (r"^\W*when\b|\b(?:what|which)\s+(?:year|date|day|month|time|century|hours?)\b|\bin which (?:year|month)\b"
         r"|\bwhat time\b|\bhow often\b", ("time", "duration")),
        (r"^\W*who(?:m)?\b", ("name",)),
    )
)
# Question words that say what kind of answer is wanted, not what it is about.
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how much many long often far does do did can could should would will "
    "is are was were there my i me we our us your you tell please know".split()
)


def expected_answer_type(question: str) -> tuple[str, ...]:
    """The answer types a question accepts (any of them), or () when it does not say."""
    text = CITATION_PATTERN.sub(" ", question)
    for pattern, kinds in QUESTION_TYPES:
        if pattern.search(text):
            return kinds
    return ()


_UNIT_FAMILIES = {
    "days": "days?", "day": "days?", "weeks": "weeks?", "months": "months?", "years": "years?", "hours": "hours?|hrs?|h",
    "minutes": "minutes?|mins?", "seconds": "seconds?|secs?|s", "kilograms": "kg|kilograms?|kilos?", "kg": "kg|kilograms?",
    "metres": "m|metres?|meters?", "meters": "m|metres?|meters?", "euros": "euros?|eur|€", "dollars": "dollars?|usd|\\$",
    "litres": "l|litres?|liters?", "liters": "l|litres?|liters?", "millilitres": "ml|millilitres?|milliliters?",
}


def unit_asked(question: str) -> str | None:
    """The unit a "how many days / hours / euros" question counts in, as an answer pattern."""
    match = re.search(r"\bhow many\s+(?:business\s+|working\s+|calendar\s+)?(\w+)", question, re.I)
    return _UNIT_FAMILIES.get(match.group(1).lower()) if match else None


def counts_in(unit: str, text: str) -> bool:
    """Does the text give a number in the unit (``unit_asked``): "3-5 business days" for days?"""
    return re.search(rf"{_NUMBER}\s*(?:-|–|to)?\s*(?:\d[\d,.]*\s*)?(?:business\s+|working\s+|calendar\s+)?(?:{unit})\b",
                     without_codes(CITATION_PATTERN.sub(" ", text)), re.I) is not None


def has_answer_of_type(answer: str, kinds: Sequence[str]) -> bool:
    text = without_codes(CITATION_PATTERN.sub(" ", answer))  # "ZR-200" holds no count of anything
    return not kinds or any(ANSWER_PATTERNS[kind].search(text) for kind in kinds)


def figures_from_other_entities(answer: str, question: str, passages: Sequence[str]) -> list[str]:
    """Figures of the answer that the context states only about other entities than the one the
    question names (empty when the question names none, or a figure is also stated for it)."""
    asked = entity_codes(question)
    if not asked:
        return []
    context = statements(passages)
    named_elsewhere = entity_codes(answer) - asked
    wrong = sorted(f"entity:{code}" for code in named_elsewhere if not asked & entity_codes(answer))
    return wrong + _stated_about_others(answer, asked, owners_by_figure(context), exclude=figures(question))


def _stated_about_others(text: str, asked: set[str], owners: Mapping[str, list[frozenset[str]]],
                         exclude: set[str] = frozenset()) -> list[str]:
    """Figures of the text that every statement of the context holding them states about other
    entities than the asked ones (``owners``: ``owners_by_figure`` of the context)."""
    return [figure for figure in sorted(figures(text) - exclude)
            if owners.get(figure) and all(entities and not (entities & asked) for entities in owners[figure])]


def addresses_question(answer: str, question: str, passages: Sequence[str], min_overlap: float) -> bool:
    """Does the answer, read with the context sentences it rests on, share a content word with
    the question beyond its question words? Without one it answers some other question."""
    topic = _topic(question)
    if not topic:
        return True
    support = set(stems(content_words(answer)))
    for sentence in _supporting_sentences(answer, passages, min_overlap):
        support |= stems(content_words(sentence))
    return bool(topic & support)


def _topic(question: str) -> set[str]:
    """What the question asks about, beyond its question words and the names it mentions ("Who
    chairs Corvan Home's board?" → chair, board): a company's name is in every answer's context."""
    rest = question.split(None, 1)[1] if len(question.split(None, 1)) > 1 else ""
    names = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+(?:'s)?", rest)}
    names |= {n.removesuffix("'s") for n in names}
    words = content_words(question) - _QUESTION_WORDS - names
    return stems(words) - stems(entity_codes(question))


def unbound_figures(answer: str, passages: Sequence[str]) -> list[str]:
    """Figures the answer ties to words no context line states them with: "The V20 runs for 18
    months in Max mode" when 18 months is the warranty line. Each figure of an answer sentence must
    share a line (read with the heading above it) with a word of that sentence other than its
    names, codes, units and question words; lines that do not hold the figure are grounding's job."""
    unbound = []
    lines = _lines_with_headings(passages)
    for sentence in split_sentences(CITATION_PATTERN.sub(" ", answer)):
        said = _claim_words(sentence)
        if not said:
            continue
        for figure in sorted(figures(sentence)):
            holders = [words for text, words in lines if figure in figures(text)]
            if holders and not any(said & words for words in holders):
                unbound.append(figure)
    return unbound


def _claim_words(text: str) -> set[str]:
    """Stems of what a sentence says beside its figures: no names, codes, units or question words."""
    rest = without_codes(text).strip()
    names = {w.lower() for w in _MID_SENTENCE_NAME.findall(rest)}
    words = content_words(rest) - names - _QUESTION_WORDS - _UNIT_WORDS
    return {w for w in stems(words) if not any(ch.isdigit() for ch in w)}


# A capitalised word inside a sentence (a name), not one opening it, a table cell or a list item.
_MID_SENTENCE_NAME = re.compile(r"(?<!^)(?<![|#*:(\-]\s)(?<![|#*:(\-])\b[A-Z][a-z]+")


def _lines_with_headings(passages: Sequence[str]) -> list[tuple[str, set[str]]]:
    """Every sentence (or table row) of the passages with its claim words and its heading's."""
    found = []
    for passage in passages:
        heading = ""
        for sentence in split_statements(passage):
            if HEADING.match(sentence):
                heading = sentence
            found.append((sentence, _claim_words(f"{heading} {sentence}")))
    return found


def _supporting_sentences(answer: str, passages: Sequence[str], min_overlap: float) -> list[str]:
    """The context sentences an answer's sentences are drawn from (by word overlap)."""
    context = [s for p in passages for s in split_sentences(p)]
    chosen = []
    for sentence in split_sentences(CITATION_PATTERN.sub(" ", answer)):
        scored = [(word_overlap(sentence, c), c) for c in context]
        best = max(scored, default=(0.0, ""))
        if best[0] >= min_overlap:
            chosen.append(best[1])
    return chosen


def fit_reasons(answer: str, question: str, passages: Sequence[str], cfg: GroundingSettings) -> list[str]:
    """Reason codes for the ways the answer does not fit the question; empty when it fits."""
    reasons = []
    kinds = expected_answer_type(question)
    if cfg.require_answer_type and kinds and not has_answer_of_type(answer, kinds):
        reasons.append(f"{ANSWER_TYPE_MISMATCH}:{'|'.join(kinds)}")
    unit = unit_asked(question) if cfg.require_answer_type else None
    if unit and not counts_in(unit, answer):
        reasons.append(f"{ANSWER_TYPE_MISMATCH}:count_in_{unit.split('?')[0].split('|')[0]}")
    if cfg.require_focus_entity:
        wrong = figures_from_other_entities(answer, question, passages)
        if wrong:
            reasons.append(f"{WRONG_ENTITY}:{','.join(wrong)}")
    if cfg.require_bound_figures:
        unbound = unbound_figures(answer, passages)
        if unbound:
            reasons.append(f"{UNBOUND_FIGURE}:{','.join(unbound)}")

    # Only where the type says little (a name, or no type): "Payload: 25 kg" answers "How much
    # weight...?" without the word "weight", and the weight type already checks that answer.
    if cfg.require_question_topic and kinds in ((), ("name",)) and not addresses_question(
        answer, question, passages, cfg.grounding_word_overlap
    ):
        reasons.append(OFF_QUESTION)
    return reasons


def quoted_about_asked(sentence: str, question: str) -> str:
    """The part of a context sentence to quote for the question: of a table row comparing entities,
    the asked entity's value with the row's label (its neighbours' values would be wrong answers);
    any other sentence whole."""
    asked = entity_codes(question)
    picked = [cell.text for cell in cells_by_entity(sentence) if cell.entities & asked]
    return picked[0] if len(picked) == 1 else sentence


# Words that say what type of answer a question wants ("how much does it cost", "how big"), not what
# it is about: the answer-type check already holds the answer to them.
_TYPE_WORDS = frozenset(
    "cost costs price prices priced pay paid fee fees worth weigh weighs weight heavy big large small size "
    "long short take takes last lasts often soon quickly far tall wide high deep number amount time".split()
)


_NAME_BEFORE_CODE = re.compile(r"\b([A-Z][a-z]+)\s+(?=[A-Za-z]*-?\d)")


def context_vocabulary(context: Sequence[Statement]) -> set[str]:
    """The word stems the context uses anywhere, headings included."""
    vocabulary: set[str] = set()
    for statement in context:
        vocabulary |= stems(content_words(f"{statement.headings} {statement.text}"))
    return vocabulary


def question_coverage(sentence: str, question: str, headings: str, vocabulary: set[str]) -> float:
    """The share of the question's subject words, those the context uses somewhere, that the
    sentence or its headings say: "How much does the V25's dock weigh?" is about the dock, and the
    V25's weight row never says "dock" though the context does. 1.0 when nothing is left to check."""
    numbers = set(_NUMBER_WORDS.split("|"))
    product_names = {m.group(1).lower() for m in _NAME_BEFORE_CODE.finditer(question)}  # "Vela" of "Vela V25"
    asked = content_words(question) - _QUESTION_WORDS - _UNIT_WORDS - _TYPE_WORDS - numbers - product_names
    subject = {w for w in stems(asked) - stems(entity_codes(question)) if w in vocabulary}
    if not subject:
        return 1.0
    said = stems(content_words(f"{headings} {sentence}"))
    covered = {w for w in subject if any(w == s or (min(len(w), len(s)) >= 3 and (w.startswith(s) or s.startswith(w)))
                                          for s in said)}
    return len(covered) / len(subject)


def sentence_fits(sentence: str, question: str, context: Sequence[Statement] | None = None,
                  vocabulary: set[str] | None = None, min_coverage: float = 0.0,
                  read: tuple[Mapping, Mapping] | None = None) -> bool:
    """Whether one context sentence can be the extractive answer: it holds an answer of the asked
    type; when the question names an entity, it is a statement about that entity and states no
    look-alike's figure; and it says at least ``min_coverage`` of what the question is about
    (``question_coverage``, with ``vocabulary``). ``read`` is ``(by_text, owners_by_figure)`` of the
    context, built once when many sentences are tried."""
    if not has_answer_of_type(sentence, expected_answer_type(question)):
        return False
    unit = unit_asked(question)
    if unit and not counts_in(unit, sentence):
        return False  # "how many litres" is not answered by "7 weeks"
    context = context or ()
    statements_of, owners = read or (by_text(context), owners_by_figure(context))
    entities = set(entity_codes(sentence))
    headings = ""
    for statement in statements_of.get(sentence, ()):
        entities |= statement.entities
        headings = headings or statement.headings
    asked = entity_codes(question)
    if asked and not entities & asked:
        return False
    if asked and _stated_about_others(sentence, asked, owners):
        return False  # it also states a look-alike's figure: the answer check would refuse the quote
    # Prose says its subject in too many ways to count words, unless a named model narrows it down
    # to that model's statements, of which only the asked attribute's answers.
    if vocabulary is None or not (asked or is_labelled(sentence)):
        return True
    return question_coverage(sentence, question, headings, vocabulary) >= min_coverage
