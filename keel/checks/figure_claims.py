"""What an answer claims with its figures beyond the figures themselves: a range it builds and the
condition it ties a figure to. Each figure of "every 2 to 3 months" is in the context (the filter's
"every 2 months", the side brush's "every 3 to 6 months"), and "free for orders over EUR 50" is a
line of the context; but no line says "2 to 3 months", and the question asked about orders *under*
EUR 50. Grounding checks each figure on its own, so it passes both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from keel.checks.answer_types import (
    CURRENCY_CODES,
    DAY_KINDS,
    DURATION_UNITS,
    LENGTH_UNITS,
    WEIGHT_UNITS,
)
from keel.checks.statements import Statement
from keel.core.text import CITATION_PATTERN, without_codes

_FIGURE = r"\d[\d,]*(?:\.\d+)?"
# A range of a quantity: "2 to 3 months", "3-5 business days", "6–12 kg". Only with its unit: a bare
# "2024-05" is a date, "800-555" a phone number, and a range in a longer chain of figures neither.
_RANGE = re.compile(
    rf"(?<![\w.,\-–])({_FIGURE})\s*(?:-|–|to)\s*({_FIGURE})(?![\w\-–])(?=\s*(?:{DAY_KINDS}\s+)?"
    rf"(?:{DURATION_UNITS}|{LENGTH_UNITS}|{WEIGHT_UNITS}|%|per\s?cent|euros?|dollars?|{CURRENCY_CODES})\b)", re.I)
# How a context may state a range besides "2 to 3": "between 2 and 3", "2 or 3", "from 2 until 3".
_STATED_RANGE = re.compile(
    rf"(?<![\w.,])({_FIGURE})\s*(?:-|–|to|or|and|until|till)\s*({_FIGURE})(?![\w])", re.I)

# A figure bound by a condition: "under EUR 50", "orders over 50 euros", "not more than 3 items".
# The negated forms come first: "not more than 50" bounds 50 from above, as "under 50" does.
_BELOW = (r"not more than|no more than|not over|not above|not exceeding|under|below|less than|fewer than|lower than|"
          r"at most|up to")
_ABOVE = r"not less than|no less than|not under|not below|over|above|more than|greater than|higher than|at least|exceeding"
_CONDITION = re.compile(
    rf"\b(unless\s+(?:\w+\s+){{0,4}}?|except\s+(?:\w+\s+){{0,4}}?)?({_BELOW}|{_ABOVE})\s+"
    rf"(?:[$€£¥₹]\s?|{CURRENCY_CODES}\s?)?({_FIGURE})(?![\w])", re.I)
_IS_BELOW = re.compile(rf"^(?:{_BELOW})$", re.I)


def _number(text: str) -> str:
    return text.replace(",", "").rstrip(".")


def _ranges(text: str, pattern: re.Pattern = _RANGE) -> set[tuple[str, str]]:
    plain = without_codes(CITATION_PATTERN.sub(" ", text))
    return {(_number(low), _number(high)) for low, high in pattern.findall(plain)}


def ranges_not_stated(answer: str, context: Sequence[Statement]) -> list[str]:
    """The ranges of a quantity ("2 to 3 months") the answer states that the context never states
    ("2-3", "between 2 and 3", "2 or 3" all count): the answer joined two lines' figures, or a
    line's figure and its own, into a claim none makes."""
    said = _ranges(answer)
    if not said:
        return []
    stated = set().union(*(_ranges(statement.unit or statement.text, _STATED_RANGE) for statement in context))
    return sorted(f"{low}-{high}" for low, high in said - stated)


def _conditions(text: str) -> set[tuple[bool, str]]:
    """(is an upper bound, figure) for each condition the text puts on a figure: "under 50" bounds
    it from above, and so does "unless your order is over 50"."""
    found = set()
    for negated, word, figure in _CONDITION.findall(CITATION_PATTERN.sub(" ", text)):
        below = bool(_IS_BELOW.match(word))
        found.add((below != bool(negated), _number(figure)))
    return found


def reversed_conditions(answer: str, question: str) -> list[str]:
    """The figures the question bounds one way ("orders under EUR 50") that the answer only bounds
    the other ("free for orders over EUR 50"): it answers the other side of the condition."""
    asked = _conditions(question)
    said = _conditions(answer)
    return sorted({figure for upper, figure in asked if (not upper, figure) in said and (upper, figure) not in said})
