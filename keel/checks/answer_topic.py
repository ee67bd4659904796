"""Does the answer speak of what was asked? Two checks for answers that rest on a context line
about something else: an answer to "Who is the chief executive?" must share a word of the question
with the lines it rests on (``addresses_question``), and the names a "who" answer gives must stand
in a statement that says what the question is about (``names_off_question``): the support team's
head does not run the press office because her line sits near its address.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from keel.checks.answer_types import QUESTION_WORDS, TYPE_WORDS, UNIT_WORDS
from keel.checks.grounding import stems, word_overlap
from keel.checks.statements import HEADING, Statement, entity_codes, statements
from keel.core.text import CITATION_PATTERN, WORD, content_words, split_sentences


def addresses_question(answer: str, question: str, passages: Sequence[str], min_overlap: float) -> bool:
    """Does the answer, read with the context sentences it rests on, share a content word with
    the question beyond its question words? Without one it answers some other question."""
    topic = question_topic(question)
    if not topic:
        return True
    support = set(stems(content_words(answer)))
    for sentence in _supporting_sentences(answer, passages, min_overlap):
        support |= stems(content_words(sentence))
    return bool(topic & support)


def question_topic(question: str) -> set[str]:
    """What the question asks about, beyond its question words and the names it mentions ("Who
    chairs Corvan Home's board?" → chair, board): a company's name is in every answer's context."""
    question = question.replace("’", "'")  # "Home’s" is one word, not "Home" and "s"
    rest = _after_first_word(question)
    names = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+(?:'s)?", rest)}
    names |= {n.removesuffix("'s") for n in names}
    words = content_words(question) - QUESTION_WORDS - names
    return stems(words) - stems(entity_codes(question))


def _after_first_word(question: str) -> str:
    """The question without its opening word, which is capitalised for being first, not a name."""
    parts = question.split(None, 1)
    return parts[1] if len(parts) > 1 else ""


def topic_words(question: str) -> set[str]:
    """The question's topic beyond the words that say the answer's type or unit ("how much does
    it cost"): what a line must say to be about the question."""
    return question_topic(question) - stems(TYPE_WORDS | UNIT_WORDS)


def unstated_question_words(answer: str, question: str, passages: Sequence[str]) -> list[str]:
    """Words of what the question is about that the answer repeats and no passage uses: "The warranty
    period for refurbished products is 2 years" asserts of refurbished products what the documents
    only say of new ones, and "The head of marketing is Daniel Okafor" names a head of a department
    the documents never mention. A small model answers an unanswerable question by restating it
    around a neighbouring fact; the restated word is the claim nothing grounds. The words as the
    question writes them ("refurbished")."""
    topic = topic_words(question)
    if not topic:
        return []
    said = stems(content_words(CITATION_PATTERN.sub(" ", answer)))
    context = stems(content_words(" ".join(passages)))
    unstated = {word for word in topic if word in said and not plainly_says(word, context)}
    return sorted({written for written in content_words(question.replace("’", "'")) if stems({written}) & unstated})


def names_off_question(answer: str, question: str, passages: Sequence[str], specific_share: float,
                       min_share: float = 0.0) -> list[str]:
    """The names a "who" answer gives when no context statement holding one of them, read with its
    headings and the statements beside it, says at least ``min_share`` of what the question is about
    (and something of it): "Who runs the press office?" is not answered by the support team's head,
    whose line never mentions the press, nor "Who is the head of marketing?", whose line shares only
    "head" with it. A name
    the question gives counts as what it is about where at most ``specific_share`` of the statements
    say it and no heading does ("Who was Emma's brother?"). Empty when a statement fits, or when the
    answer names no one the context names."""
    asked = {w.lower() for w in WORD.findall(question)}
    lower_case = set(WORD.findall(" ".join(passages)))  # "Our", "The": words, not names
    names = {w for w in _names(answer) if w.lower() not in asked | QUESTION_WORDS and w.lower() not in lower_case}
    if not names:
        return []
    sections = [[s for s in statements([passage]) if not HEADING.match(s.text)] for passage in passages]
    context = [statement for section in sections for statement in section]
    topic = question_topic(question)
    topic |= stems({name.lower() for name in _specific_names(question, context, specific_share)})
    if not topic:
        return []
    held = False
    for section in sections:
        for index, statement in enumerate(section):
            if not any(_said_in(statement.text, name) for name in names):
                continue
            held = True
            beside = [s.text for s in section[max(0, index - 1):index + 2] if s.headings == statement.headings]
            # the word itself: "office" is said by "officer" to the prefix rule, not to a reader
            said = topic & stems(content_words(" ".join([statement.headings, *beside])))
            if said and len(said) >= min_share * len(topic):
                return []
    return sorted(names) if held else []


def _specific_names(question: str, context: Sequence[Statement], share: float) -> set[str]:
    """The names a question gives ("Who was Emma's brother?" → Emma) that few statements of the
    context say (one always is): a line naming Emma is about her; the company's name is on every line."""
    names = {n.removesuffix("'s") for n in _NAME.findall(_after_first_word(question))}
    return {n for n in names if not any(_said_in(s.headings, n) for s in context)
            and sum(_said_in(s.text, n) for s in context) <= max(1.0, share * len(context))}


def _names(text: str) -> list[str]:
    """The capitalised words of a text that are names: inside a sentence, or opening it before
    another name ("Daniel Okafor leads ..."); "Journalists can write ..." opens with a word."""
    found = []
    for sentence in split_sentences(CITATION_PATTERN.sub(" ", text)):
        words = [word for word in WORD.findall(sentence) if any(ch.isalpha() for ch in word)]  # no "-" or "1."
        found += [word for position, word in enumerate(words) if _NAME.fullmatch(word) and (
            position or (len(words) > 1 and _NAME.fullmatch(words[1])))]
    return found


def _said_in(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


# A capitalised word: a name, wherever it stands ("Daniel Okafor leads ...").
_NAME = re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)?\b")


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


def says_word(word: str, words: set[str]) -> bool:
    """Is the word among the stems, or one of them a prefix of the other ("run" / "runtime")?"""
    return any(word == w or (min(len(word), len(w)) >= 3 and (word.startswith(w) or w.startswith(word))) for w in words)


def plainly_says(word: str, words: set[str]) -> bool:
    """Is the word among the stems as a reader would see it: the same stem, or one a longer form of
    the other that differs only in its ending ("updat" / "update", "sav" / "save"), hyphens aside
    ("e-mail" / "email"). Stricter than ``says_word``, whose
    prefix rule takes "mark" for "marketing": here the question is whether the documents use the word."""
    def same(a: str, b: str) -> bool:
        short, long = sorted((a.replace("-", ""), b.replace("-", "")), key=len)  # "e-mail" is "email"
        return long.startswith(short) and (len(long) - len(short) <= 1 or len(short) >= max(4, 0.75 * len(long)))
    return any(word == w or same(word, w) for w in words)


def topic_relevance(similarities: Callable[[str, list[str]], list[float]], weight: float
                    ) -> Callable[[str, list[str]], list[float]]:
    """How relevant each context sentence is to a question: the embedding's cosine plus ``weight``
    times its ``topic_shares``. Small embedding models read "In which year was Corvan Home
    founded?" as closest to any line naming Corvan Home; the line that says "founded" is the one
    about it. Unchanged with weight 0."""
    if not weight:
        return similarities

    def relevance(question: str, sentences: list[str]) -> list[float]:
        shares = topic_shares(question, sentences)
        return [score + weight * share for score, share in zip(similarities(question, sentences), shares, strict=False)]

    return relevance


def topic_shares(question: str, sentences: Sequence[str]) -> list[float]:
    """For each sentence, the share of the question's topic words (beyond its names, question, type
    and unit words) that it says; 0 for all when the question has none."""
    topic = topic_words(question)
    if not topic:
        return [0.0] * len(sentences)
    return [sum(says_word(word, said) for word in topic) / len(topic)
            for said in (stems(content_words(sentence)) for sentence in sentences)]
