"""What an answer claims with its figures beyond the figures themselves: a range it builds and the
condition it ties a figure to. Each figure of "every 2 to 3 months" is in the context (the filter's
"every 2 months", the side brush's "every 3 to 6 months"), and "free for orders over EUR 50" is a
line of the context; but no line says "2 to 3 months", and the question asked about orders *under*
EUR 50. Grounding checks each figure on its own, so it passes both.
"""

from __future__ import annotations

import re
from typing import Sequence

from keel.checks.statements import Statement
from keel.core.text import CITATION_PATTERN, without_codes

# "2 to 3", "3-5", "6–12": two figures joined as one range.
_RANGE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s*(?:-|–|to)\s*(\d[\d,]*(?:\.\d+)?)(?![\w])")

# A figure bound by a condition: "under EUR 50", "orders over 50 euros", "more than 3 items".
_BELOW = r"under|below|less than|fewer than|lower than|at most|up to|no more than"
_ABOVE = r"over|above|more than|greater than|higher than|at least|exceeding"
_CONDITION = re.compile(
    rf"\b({_BELOW}|{_ABOVE})\s+(?:[$€£]\s?|(?:eur|usd|gbp|chf)\s?)?(\d[\d,]*(?:\.\d+)?)(?![\w])", re.I)
_IS_BELOW = re.compile(rf"^(?:{_BELOW})$", re.I)


def _number(text: str) -> str:
    return text.replace(",", "").rstrip(".")


def _ranges(text: str) -> set[tuple[str, str]]:
    return {(_number(low), _number(high)) for low, high in _RANGE.findall(without_codes(CITATION_PATTERN.sub(" ", text)))}


def ranges_not_stated(answer: str, context: Sequence[Statement]) -> list[str]:
    """The ranges ("2-3") the answer states that the context never states (as "2 to 3", "2-3"...):
    the answer joined two lines' figures, or a line's figure and its own, into a claim none makes."""
    stated = set().union(*(_ranges(statement.unit or statement.text) for statement in context))
    return sorted(f"{low}-{high}" for low, high in _ranges(answer) - stated)


def _conditions(text: str) -> set[tuple[bool, str]]:
    """(is an upper bound, figure) for each condition the text puts on a figure: "under 50" bounds from above."""
    return {(bool(_IS_BELOW.match(" ".join(word.split()))), _number(figure))
            for word, figure in _CONDITION.findall(CITATION_PATTERN.sub(" ", text))}


def reversed_conditions(answer: str, question: str) -> list[str]:
    """The figures the question bounds one way ("orders under EUR 50") that the answer only bounds
    the other ("free for orders over EUR 50"): it answers the other side of the condition."""
    asked = _conditions(question)
    said = _conditions(answer)
    return sorted({figure for upper, figure in asked if (not upper, figure) in said and (upper, figure) not in said})
