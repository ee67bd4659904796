"""How much of what the question asks about does a line of the documents say? The measure behind
the checks that an answer, or the line it rests on, is about the question and not about its
neighbour: "How long does a firmware update take?" is not answered by the runtime row, and "What
does a solid red light mean?" is not answered with the words of the line about the mesh node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from keel.checks.answer_topic import says_word
from keel.checks.answer_types import NUMBER_WORDS, QUESTION_WORDS, TYPE_WORDS, UNIT_WORDS
from keel.checks.grounding import stems
from keel.checks.statements import Statement, entity_codes, is_labelled
from keel.core.text import content_words, without_codes

# The product line written before a model code: "Vela" of "Vela V25".
NAME_BEFORE_CODE = re.compile(r"\b([A-Z][a-z]+)\s+(?=[A-Za-z]*-?\d)")

# A capitalised word inside a sentence (a name), not one opening it, a table cell or a list item.
_MID_SENTENCE_NAME = re.compile(r"(?<!^)(?<![|#*:(\-]\s)(?<![|#*:(\-])\b[A-Z][a-z]+")


def claim_words(text: str) -> set[str]:
    """Stems of what a sentence says beside its figures: no names, codes, units or question words."""
    rest = without_codes(text).strip()
    names = {w.lower() for w in _MID_SENTENCE_NAME.findall(rest)}
    words = content_words(rest) - names - QUESTION_WORDS - UNIT_WORDS
    return {w for w in stems(words) if not any(ch.isdigit() for ch in w)}


def context_vocabulary(context: Sequence[Statement]) -> set[str]:
    """The word stems the context uses anywhere, headings included."""
    vocabulary: set[str] = set()
    for statement in context:
        vocabulary |= stems(content_words(f"{statement.headings} {statement.text}"))
    return vocabulary


def question_coverage(sentence: str, question: str, setting: str, vocabulary: set[str],
                      unused_weight: float = 0.0) -> float:
    """The share of the question's subject words that the sentence or its setting (headings, list item)
    say: "How much does the V25's dock weigh?" is about the dock, and the V25's weight row never says
    "dock" though the context does. A word the context never uses (not in ``vocabulary``) weighs
    ``unused_weight``: it may be the asker's own word for what the documents say ("seen" for
    "visible"), or what they never state ("refurbished"). 1.0 when nothing is left to check, and when
    no word of the question is one the context uses ("How long does shipping take?" of a page that
    says "delivery"): a question in other words throughout cannot be held to any line's."""
    numbers = set(NUMBER_WORDS.split("|"))
    product_names = {m.group(1).lower() for m in NAME_BEFORE_CODE.finditer(question)}
    asked = content_words(question) - QUESTION_WORDS - UNIT_WORDS - TYPE_WORDS - numbers - product_names
    codes = entity_codes(question)  # the entity is checked on its own; "zr-200" is the code "zr200"
    weights = {w: 1.0 if w in vocabulary else unused_weight for w in stems(asked) if w.replace("-", "") not in codes}
    if not any(w in vocabulary for w in weights):  # the asker's words throughout: nothing to hold a line to
        return 1.0
    said = stems(content_words(f"{setting} {sentence}"))
    return sum(weight for word, weight in weights.items() if says_word(word, said)) / sum(weights.values())


def words_off_question(answer: str, question: str, context: Sequence[Statement], min_coverage: float,
                       min_share: float, unused_weight: float = 0.0) -> list[str]:
    """What the answer says, taken from lines about something else than the question: of its words
    that the context holds, fewer than ``min_share`` stand in a statement saying at least
    ``min_coverage`` of the question (``question_coverage``, read with its headings), and the rest
    stand only in other statements. "A solid red light means the router is connected to the main
    node" takes the mesh line's words for the light table's "Solid red | No internet connection".
    Judged where a table row or "Label: value" line says enough of the question: prose says its
    subject in too many ways to hold an answer's words to one line. Empty otherwise, or when the
    answer says nothing the context holds beyond the question's own words."""
    said = claim_words(answer) - stems(content_words(question)) - TYPE_WORDS
    if not said:
        return []
    vocabulary = context_vocabulary(context)
    on = {id(s) for s in context
          if question_coverage(s.text, question, s.setting, vocabulary, unused_weight) >= min_coverage}
    if not any(is_labelled(s.text) for s in context if id(s) in on):
        return []
    return borrowed_words(said, context, lambda statement: id(statement) in on, min_share)


def borrowed_words(said: set[str], context: Sequence[Statement], is_about: Callable[[Statement], bool],
                   min_share: float) -> list[str]:
    """Of the words ``said`` that the context holds (read with its headings), those standing only in
    statements not about the subject (``is_about``), when fewer than ``min_share`` of them stand in
    statements about it; empty otherwise, or when no statement is about it."""
    about, elsewhere = set(), set()
    for statement in context:
        (about if is_about(statement) else elsewhere).update(stems(content_words(f"{statement.headings} {statement.text}")))
    own = {word for word in said if says_word(word, about)}
    borrowed = {word for word in said - own if says_word(word, elsewhere)}
    if not about or not borrowed or len(own) >= min_share * len(own | borrowed):
        return []
    return sorted(borrowed)
