"""The answer's structure and plan: numbered lists, bullets, headings, the
items an answer announces ("three steps: planning, design and testing"), the next expected number,
and the topics already covered, so a continuation can be told what is left and checked against it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from keel.core.settings.continuation import ContinuationSettings
from keel.core.text import content_words

NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}
NUMBERED_ITEM = re.compile(r"(?m)^\s*(?:step\s+)?(\d{1,2})[.):](?:[ \t]+(.*))?$", re.I)
BULLET_ITEM = re.compile(r"(?m)^\s*[-*\u2022]\s+(.+)$")
HEADING = re.compile(r"(?m)^\s*(?:#{1,6}\s+(.+?)|\*\*(.+?)\*\*:?|([A-Z][^.!?\n]{2,60}):)\s*$")
ANNOUNCED = re.compile(
    r"\b(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+(?:main\s+|key\s+|major\s+|important\s+)?"
    r"(steps|ways|reasons|types|kinds|stages|phases|parts|factors|points|causes|methods|examples|things|"
    r"benefits|components|categories|elements|aspects)\b[^:.\n]*:[ \t]*([^.\n]*)",
    re.I,
)


@dataclass
class AnswerStructure:
    """The lists, headings and announced plan of an answer: what completeness checks against."""
    numbered: list[tuple[int, str]] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)  # items the answer announced it would cover
    expected_count: int | None = None  # "three steps" -> 3
    plan_end: int = 0  # where the announcement of the plan ends in the text
    list_unfinished: bool = False

    @property
    def next_number(self) -> int | None:
        """The number the list should continue with, when a numbered list is under way or promised."""
        if not self.numbered:
            return 1 if self.expected_count and not self.planned else None
        last, item = self.numbered[-1]
        if not item.strip():
            return last  # the item's number is written, its text is not
        if self.expected_count is not None and last >= self.expected_count:
            return None
        return last + 1

    @property
    def elements(self) -> list[str]:
        """Every structural element, for relevance and coherence checks."""
        return [t for _, t in self.numbered if t.strip()] + self.bullets + self.headings + self.planned

    def covered_topics(
        self,
        limit: int = ContinuationSettings.covered_topics_limit,
        label_words: int = ContinuationSettings.topic_label_words,
    ) -> list[str]:
        """Short labels of what the answer already covers: headings and list item openings."""
        labels = self.headings + [_label(t, label_words) for _, t in self.numbered if t.strip()] + [
            _label(b, label_words) for b in self.bullets]
        return [label for label in dict.fromkeys(labels) if label][:limit]

    def unmentioned(self, text: str) -> list[str]:
        """Planned items the answer has not discussed yet (after announcing them)."""
        words = content_words(text[self.plan_end:])
        return [item for item in self.planned if not content_words(item) <= words]


def _label(text: str, words: int) -> str:
    return " ".join(re.sub(r"[*_#`]", "", text).split()[:words]).rstrip(",;:")


def extract_structure(text: str) -> AnswerStructure:
    """The numbered items, bullets, headings and announced plan of ``text``."""
    structure = AnswerStructure()
    structure.numbered = [(int(n), (item or "").strip()) for n, item in NUMBERED_ITEM.findall(text or "")]
    structure.bullets = [b.strip() for b in BULLET_ITEM.findall(text or "")]
    structure.headings = [next(g for g in groups if g).strip() for groups in HEADING.findall(text or "")]
    announced = ANNOUNCED.search(text or "")
    if announced:
        count = announced.group(1).lower()
        structure.expected_count = int(count) if count.isdigit() else NUMBER_WORDS[count]
        structure.plan_end = announced.end()
        if announced.group(3).strip():
            items = re.split(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+", announced.group(3))
            structure.planned = [i.strip() for i in items if i.strip()]
    structure.list_unfinished = _list_unfinished(text or "", structure)
    return structure


def _list_unfinished(text: str, structure: AnswerStructure) -> bool:
    stripped = text.rstrip()
    last_line = stripped.splitlines()[-1] if stripped else ""
    if re.fullmatch(r"\s*(?:step\s+)?\d{1,2}[.):]?\s*", last_line, re.I) and (structure.numbered or len(stripped) > len(last_line)):
        return True  # the text stops at an item's number
    if structure.numbered and structure.expected_count and structure.numbered[-1][0] < structure.expected_count:
        return True
    if re.search(r":\s*$", stripped):
        return True  # a list was introduced and nothing followed
    if structure.expected_count and not structure.numbered and not structure.bullets and not structure.planned:
        return len(re.findall(r"[.!?](\s|$)", stripped)) < 2  # "There are three steps." and nothing yet
    return False


@dataclass
class CoherenceVerdict:
    """Whether an answer's items keep to what it announced, and why not."""
    coherent: bool
    reason: str = ""
    similarity: float | None = None


def structure_coherence(
    continuation: str,
    structure: AnswerStructure,
    similarity: Callable[[str, list[str]], list[float]],
    off_plan_similarity: float,
    off_numbering_similarity: float,
) -> CoherenceVerdict:
    """Does the continuation follow the answer's plan?

    No structure mentions and similarity below ``off_plan_similarity`` -> off plan; a numbered item
    expected but not found and similarity below ``off_numbering_similarity`` -> off plan.
    """
    elements = structure.elements
    if not elements and structure.next_number is None:
        return CoherenceVerdict(True)
    words = content_words(continuation)
    mentions = any(content_words(e) & words for e in elements)
    best = max(similarity(continuation, elements), default=0.0) if elements else 0.0
    expected = structure.next_number
    numbering_found = expected is None or bool(
        re.search(rf"(?m)^\s*(?:step\s+)?{expected}[.):]", continuation, re.I)
        or re.search(rf"\b{expected}[.)]\s", continuation)
    )
    if elements and not mentions and best < off_plan_similarity:
        return CoherenceVerdict(False, "off_plan", best)
    if not numbering_found and best < off_numbering_similarity:
        return CoherenceVerdict(False, "numbering_lost", best)
    return CoherenceVerdict(True, "", best)
