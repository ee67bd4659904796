"""What kind of answer a question asks for: "how long" a duration, "how much does it cost" an
amount of money, "how many days" a count in days, "who" a name, "when" a date or time; and
whether a text holds an answer of that kind. The answer-fit checks and the extractive attempt
both read questions through these."""

from __future__ import annotations

import re
from collections.abc import Sequence

from keel.core.text import CITATION_PATTERN, without_codes

NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|"
    "seventy|eighty|ninety|hundred|thousand|million|billion|dozen|several|a few|half an?"
)
_NUMBER = rf"(?:\d[\d,.]*|\b(?:{NUMBER_WORDS})\b)"
_DURATION_UNITS = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?|yrs?|decades?|centur(?:y|ies))"
_LENGTH_UNITS = r"(?:mm|cm|m|km|metres?|meters?|kilomet(?:er|re)s?|centimet(?:er|re)s?|millimet(?:er|re)s?|inch(?:es)?|in|feet|foot|ft|miles?|yards?)"
_WEIGHT_UNITS = r"(?:kg|kilograms?|kilos?|g|grams?|lbs?|pounds?|tons?|tonnes?|t|oz|ounces?)"
# "free" as a price ("delivery is free", "Free", "free shipping"), not "0.5 m of free space",
# "hands-free", "feel free", "free of dust" or "to free the brush"
_FREE = (r"(?<![\w-])(?<!feel )(?<!to )free(?![\w-])"
         r"(?!\s+(?:space|spaces|up|time|(?:of|from)\s+(?!charge|cost)))")
_DAY_KINDS = r"(?:business|working|calendar|banking|school)"  # "5 banking days" is a duration
_CURRENCY_CODES = r"(?:eur|usd|gbp|chf|cad|aud|nzd|jpy|cny|inr|sek|nok|dkk|pln|czk|zar|brl|mxn|sgd|hkd)"
_MONEY = (  # "€9.90", "9.90 euros", "EUR 9.90" (a currency code before the amount), "free"
    rf"(?:[$€£¥₹]\s?\d|\b{_CURRENCY_CODES}\s?\d|\d[\d,.]*\s?(?:[$€£¥₹]|euros?|dollars?|{_CURRENCY_CODES}|pounds?|"
    r"cents?|francs?|yen|yuan|rupees?|kronor|kroner|krona|crowns?)\b"
    rf"|{_FREE}|\b(?:no charge|no cost|at no extra cost)\b)"
)
# the unit patterns, for checks that read quantities in answers (keel/checks/figure_claims.py)
DURATION_UNITS, LENGTH_UNITS, WEIGHT_UNITS = _DURATION_UNITS, _LENGTH_UNITS, _WEIGHT_UNITS
DAY_KINDS, CURRENCY_CODES = _DAY_KINDS, _CURRENCY_CODES
UNIT_WORDS = frozenset(
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
        rf"{_NUMBER}\s*(?:-|–|to|or)?\s*(?:\d[\d,.]*\s*)?(?:{_DAY_KINDS}\s+)?{_DURATION_UNITS}\b"
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
         r"|\bwhat time\b|\bhow (?:often|soon|quickly|frequently)\b", ("time", "duration")),
        (r"^\W*who(?:m)?\b", ("name",)),
    )
)
# Question words that say what kind of answer is wanted, not what it is about.
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how much many long often far does do did can could should would will "
    "is are was were there my i me we our us your you tell please know about".split()
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
    match = re.search(rf"\bhow many\s+(?:{_DAY_KINDS}\s+)?(\w+)", question, re.I)
    return _UNIT_FAMILIES.get(match.group(1).lower()) if match else None


def counts_in(unit: str, text: str) -> bool:
    """Does the text give a number in the unit (``unit_asked``): "3-5 business days" for days?"""
    return re.search(rf"{_NUMBER}\s*(?:-|–|to)?\s*(?:\d[\d,.]*\s*)?(?:{_DAY_KINDS}\s+)?(?:{unit})\b",
                     without_codes(CITATION_PATTERN.sub(" ", text)), re.I) is not None


def has_answer_of_type(answer: str, kinds: Sequence[str]) -> bool:
    """Whether the answer holds an answer of one of the asked ``kinds`` (a figure for "how much"...)."""
    text = without_codes(CITATION_PATTERN.sub(" ", answer))  # "ZR-200" holds no count of anything
    return not kinds or any(ANSWER_PATTERNS[kind].search(text) for kind in kinds)


# Words that say what type of answer a question wants ("how much does it cost", "how big"), not what
# it is about: the answer-type check already holds the answer to them.
TYPE_WORDS = frozenset(
    "cost costs price prices priced pay paid fee fees worth weigh weighs weight heavy big large small size "
    "long short take takes last lasts often soon quickly far tall wide high deep number amount time".split()
)
