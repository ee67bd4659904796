"""Is the evidence about what was asked, or about its sibling?

Documents that help people are full of look-alikes: the same table row for full-time staff and
for part-time staff, the same opening hours for two sites, one price for plan A and one for
plan B, the storage-fee deadline beside the return-fee one. A small model asked
about one quotes the other word for word, and grounding passes it: the sentence is in the documents.

One mechanism covers them all, without a word list per domain. Two terms are **siblings** when
the documents write them in the same frame: beside the same word ("Riverside branch" / "Hillcrest
branch", "band A" / "band D", "day staff" / "night staff", "storage fee" / "return
fee"). A question's **qualifier** is one of its words that has a sibling in the context. The
statement an answer rests on, read with its headings, its table row and its document's name, must
say each qualifier; when it says a sibling of one instead ("Hillcrest" asked, "Riverside" said), the
statement is about the sibling and the answer is "I don't know".

Frames are read from the words on either side, so the rule holds in any language that writes
qualifiers beside the word they qualify; the stop words that never make a frame are English.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from keel.checks.answer_types import QUESTION_WORDS, TYPE_WORDS
from keel.checks.grounding import stems
from keel.checks.statements import Statement
from keel.core.text import CITATION_PATTERN, STOPWORDS, content_words, split_sentences

ABOUT_A_SIBLING = "about_a_sibling"

# Words that carry no qualifier and make no frame: grammar, question words, what a type asks for.
# English (with the shared stop words).
_NOT_A_FRAME = STOPWORDS | QUESTION_WORDS | TYPE_WORDS | frozenset(
    "can could may might must should will would shall per each every any all some more most less "
    "my your our their his her them us me who whom whose which what when where why how there here "
    "get gets got give gives given receive receives received need needs use used make made "
    "after before during once within beyond over under between until since past above below up down "
    "out off onto upon via without against toward towards while if unless than also only just very "
    "extra additional further other another same versus vs "
    # Adjectives that pick a thing out without saying what it is like: "a specific algorithm" and
    # "a particular algorithm" are one algorithm, not two siblings.
    "specific particular certain exact precise whole entire such "
    "example instance".split())  # "for example", "for instance": no condition
# The words that open a condition: the day, the place, the group a statement holds for (English).
_CONDITIONS = frozenset("on at for during".split())
_ARTICLES = frozenset("a an the".split())
_NUMBER_WORDS = {word: str(number) for number, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
# A word, or a number; one capital letter standing alone is a designator ("band D", "plan A").
_TOKEN = re.compile(r"[^\W\d_][\w'-]*|\d+(?:[.,]\d+)?", re.UNICODE)
_DESIGNATOR = re.compile(r"^[A-Z]$")
# A verb form ("delivered", "recessed", "running") neither qualifies nor is qualified: the
# qualifiers this rule reads are nouns and adjectives beside nouns (English endings).
_VERB_FORM = re.compile(r"(?:ed|ing)$")


def tokens(text: str) -> list[str]:
    """The text's words in order, lower-cased and lightly stemmed, a lone capital kept as written
    (the "A" of "grade A" is no article); citations and markup dropped."""
    text = CITATION_PATTERN.sub(" ", text).replace("’", "'")
    return [word if _DESIGNATOR.match(word) else _NUMBER_WORDS.get(word.lower(), _base(word))
            for word in _TOKEN.findall(text)]


def _base(word: str) -> str:
    """The word lower-cased, a plural's "s" taken off: "allowances" and "allowance" are one word;
    an owner ("the clinic's") and a grammar word ("does") stay as written."""
    word = word.lower()
    if word.endswith("'s") or word in _NOT_A_FRAME:
        return word
    if len(word) > 4 and word.endswith("ies"):  # "classifies", "classify"; "policies", "policy"
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _frames(words: list[str]) -> Iterable[tuple[str, tuple[str, str]]]:
    """Each word of a run with the frames it fills: ("<", its left neighbour), (">", its right one)
    and ("@", the word opening the condition it names: "on (a) Saturday"). Grammar words and figures
    make no frame; a figure fills one ("zone 3")."""
    for _, word, frame in _framed(words):
        yield word, frame


def _framed(words: list[str]) -> Iterable[tuple[int, str, tuple[str, str]]]:
    """``_frames`` with each word's position."""
    def frames_with(word: str) -> bool:
        return word not in _NOT_A_FRAME and not word[0].isdigit() and not _VERB_FORM.search(word)

    for index, word in enumerate(words):
        if word in _NOT_A_FRAME or word.endswith("'s") or _VERB_FORM.search(word):
            continue
        if index > 0 and frames_with(words[index - 1]):
            yield index, word, ("<", words[index - 1])
        if index + 1 < len(words) and frames_with(words[index + 1]):
            yield index, word, (">", words[index + 1])
        before = index - 1
        while before >= 0 and words[before] in _ARTICLES:
            before -= 1
        if before >= 0 and words[before] in _CONDITIONS:  # "on Saturdays", "at Hillcrest", "for interns"
            yield index, word, ("@", words[before])


def frame_fillers(texts: Iterable[str]) -> dict[tuple[str, str], set[str]]:
    """Each frame of the texts ("<" or ">" and a word) with the words written in it."""
    filling: dict[tuple[str, str], set[str]] = {}
    for text in texts:
        for line in re.split(r"[\n|;()\[\]]+|[.!?,]\s|\s[\u2013\u2014-]\s", text):  # frames end at cells, clauses and sentences
            for word, frame in _frames(tokens(line)):
                filling.setdefault(frame, set()).add(word)
    return filling


# "grades A to C", "tiers 1-3": a range says every designator or figure in it.
_RANGE = re.compile(r"(?<![\w-])([A-Z]|\d{1,3})\s*(?:to|through|-|\u2013)\s*([A-Z]|\d{1,3})(?![\w-])")
_LONGEST_RANGE = 50


def _in_ranges(text: str) -> set[str]:
    """The lone capitals and small whole numbers that a range of the text spans ("A to C" says B)."""
    spanned = set()
    for start, end in _RANGE.findall(text):
        if start.isdigit() != end.isdigit():
            continue
        low, high = (int(start), int(end)) if start.isdigit() else (ord(start), ord(end))
        if 0 < high - low <= _LONGEST_RANGE:
            spanned |= {str(n) if start.isdigit() else chr(n) for n in range(low, high + 1)}
    return spanned


def _kind(word: str) -> str:
    """A qualifier's sibling is of its kind: a figure for a figure, a lone capital for a lone capital."""
    return "figure" if word[0].isdigit() else "designator" if _DESIGNATOR.match(word) else "word"


def _qualifiers(question: list[str]) -> list[tuple[str, tuple[str, str]]]:
    """The question's qualifiers with their frames: a word before the word it qualifies ("Hillcrest
    clinic", "warehouse staff") or naming a condition ("on Saturdays", "for interns"), a figure or
    lone capital after its word ("zone 3", "band D"). The word order is English's (adjectives and
    noun modifiers first)."""
    return [(word, frame) for index, word, frame in _framed(question)
            if (frame[0] in ">@") == (_kind(word) == "word") and not _verb_position(question, index)]


# Where English puts a verb: after "to", an adverb, or an auxiliary ("to define", "broadly define",
# "does it cover"); a verb before its object is no qualifier of it.
_BEFORE_A_VERB = frozenset("to do does did can could will would shall should may might must".split())


def _verb_position(words: list[str], index: int) -> bool:
    before = words[index - 1] if index > 0 else ""
    return before in _BEFORE_A_VERB or (len(before) > 4 and before.endswith("ly"))


def sibling_instead(question: str, statement: str, headings: Iterable[str] = (), source: str = "") -> list[str]:
    """"asked>said" for each qualifier of the question (the "Hillcrest" of "Hillcrest branch", the "D"
    of "band D") that the statement, read under its ``headings`` and with its ``source`` document's
    name, does not say, while it (or a heading) writes another word in that frame ("Riverside branch",
    "Band B") that the question does not; empty when the statement is about what was asked."""
    asked = tokens(question)
    lines = [statement, *headings]
    said = set(tokens(" ".join([*lines, source]))) | _in_ranges(statement)
    written = frame_fillers(lines)
    found = []
    for word, frame in _qualifiers(asked):
        if word in said or ("-" in word and (word.split("-")[-1] in said or word.replace("-", "") in said)):
            continue  # "high-priority" is said by "P2 - High priority", "day-to-day" by a PDF's "daytoday"
        instead = sorted(other for other in written.get(frame, set()) - set(asked) if _kind(other) == _kind(word))
        if instead:
            found.append(f"{word}>{instead[0]}")
    return sorted(set(found))


def statement_about_sibling(question: str, statement: Statement, source: str = "") -> list[str]:
    """``sibling_instead`` for a statement of the context: its whole sentence or table row (the row's
    label names whom a cell is about), under its headings and list item."""
    return sibling_instead(question, statement.unit or statement.text, (*statement.heading_lines, statement.item), source)


def rests_on_siblings(answer: str, question: str, context: Sequence[Statement]) -> list[str]:
    """What the answer's lead claim says of a sibling of what was asked (``statement_about_sibling``):
    its first sentence that says more than the question rests on the statements sharing the most of
    its new words, and every one of them is about a sibling ("Hillcrest" asked, the Riverside line
    quoted). Empty when one is about what was asked, or no statement holds most of its words
    (grounding's to judge)."""
    asked = stems(content_words(question))
    claims = [stems(content_words(s)) - asked for s in split_sentences(CITATION_PATTERN.sub(" ", answer))]
    lead = next((words for words in claims if words), None)
    if not lead or not context:
        return []
    shares = [len(lead & stems(content_words(s.unit or s.text))) / len(lead) for s in context]
    best = max(shares)
    if best < 0.5:
        return []
    verdicts = [statement_about_sibling(question, s) for s, share in zip(context, shares, strict=False) if share == best]
    return verdicts[0] if all(verdicts) else []


def about_a_sibling(sentence: str, question: str, statements_of: Mapping) -> bool:
    """Is every statement the context sentence stands for (``statements_of``: ``by_text`` of the
    context) about a sibling of what the question asks about?"""
    read_as = statements_of.get(sentence, ())
    return bool(read_as) and all(statement_about_sibling(question, s) for s in read_as)
