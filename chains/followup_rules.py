"""The standalone question a follow-up stands for, by rules: the fallback when no model rewrite passes.

Three shapes of follow-up (keel/checks/followup_rewrite.py tells them apart), each rewritten from the
question it leans on, so the result holds only the user's words and that question's:

- a bare phrase replaces the part of the last question it stands in for: "And on Sundays?" after
  "When is the Linden library open on Saturdays?" -> "When is the Linden library open on Sundays?". A
  phrase that opens with a preposition replaces a part that opens with the same one; any other takes
  the part it reads closest to (embedding similarity), "interns" for "full-time employees";
- a reference word takes the last question's subject: "Who signed it?" after "What did the memo
  announce?" -> "Who signed the memo?";
- a whole question after a lead ("And how much is the A7?") loses the lead.

The rules read English word order and English function words; other languages keep the question
as asked unless the chat model's rewrite passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from keel.checks.followup_rewrite import (
    BARE_PHRASE,
    DETERMINERS,
    LEAD_ONLY,
    PREPOSITIONS,
    QUESTION_WORDS,
    REFERENCE_WORDS,
    REFERRING,
    followup_kind,
    is_grammar,
    strip_lead,
)
from keel.core.text import WORD

Similarity = Callable[[str, Sequence[str]], Sequence[float]]

# An auxiliary that leaves the main verb at the end of the subject after it: "does the filter *last*".
DO_SUPPORT = frozenset("do does did can could will would should shall may might must".split())
# A lone word of these endings after "is", "were"... is the verb's participle, not a noun ("were delivered").
PARTICIPLE_ENDINGS = ("ed", "en", "ing")
# After "is", "are"...: a subject's last word that says its state, not what it is ("the clinic *open*").
BE_FORMS = frozenset("is are was were".split())
STATE_WORDS = frozenset("open closed available valid due free busy ready".split())
# Reference words that stand for the subject as its owner: "its price" -> "the A7's price".
POSSESSIVES = frozenset({"its", "their", "his", "her"})
# One-word adverbs that replace a whole part: "What about abroad?" for "... in Germany?" (English).
ADVERBIAL_PLACES = frozenset("abroad overseas online remotely onsite offsite home outside inside elsewhere weekends".split())
# Reference words for a person: they take the last person named ("What is his email?" after "Sam Okoro
# manages the hub"), in the answer first, then in the question.
PERSON_WORDS = frozenset("he she him her his hers".split())
PERSON_NAME = re.compile(r"\b(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?\s+[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?\b")
# Below this similarity no part of the last question is what a bare phrase stands in for; the
# phrase is then asked about the last question's subject instead.
MIN_PART_SIMILARITY = 0.25


@dataclass(frozen=True)
class Part:
    """A stretch of the last question, by character offsets into it."""

    start: int
    end: int
    text: str
    prepositional: bool


def rewrite_by_rules(question: str, previous: str, similarity: Similarity, last_answer: str = "") -> str:
    """The standalone question for the follow-up ``question`` after ``previous`` (the last question as
    it was answered, and ``last_answer`` what was said to it); ``question`` itself when the rules find
    nothing to fill in."""
    kind = followup_kind(question)
    lead, rest = strip_lead(question)
    if kind == LEAD_ONLY:
        return _capitalised(rest)
    if not _is_question(previous):
        return question  # "Hello" or "Thanks" gives nothing to fill in
    if kind == BARE_PHRASE:
        return _substitute(previous, rest.strip().rstrip("?.! "), similarity, asked_about=bool(lead)) or question
    if kind == REFERRING:
        return _resolve_reference(rest, previous, last_answer)
    return question


def _is_question(text: str) -> bool:
    words = [word.lower() for word in WORD.findall(text)]
    return text.strip().endswith("?") or bool(words and words[0] in QUESTION_WORDS)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _tokens(text: str) -> list[re.Match]:
    return list(WORD.finditer(text))


def parts_of(question: str) -> list[Part]:
    """The question's prepositional parts ("on Saturdays", "for the early shift") and noun parts
    ("the Linden library", "the blade of the Orbit B4"), each with a determiner before it."""
    body = question.rstrip(" ?.!")
    tokens = _tokens(body)
    parts: list[Part] = []
    index = 0
    while index < len(tokens):
        word = tokens[index].group().lower()
        if word in PREPOSITIONS:
            end = index + 1
            while end < len(tokens) and tokens[end].group().lower() not in PREPOSITIONS:
                end += 1
            if end > index + 1:
                parts.append(_part(body, tokens, index, end, prepositional=True))
            index += 1
            continue
        if not is_grammar(tokens[index].group()):
            start, end = index, _noun_end(tokens, index)
            before = {t.group().lower() for t in tokens[:start]}
            last = tokens[end - 1].group().lower()
            closes_subject = bool(before & DO_SUPPORT) or (
                bool(before & BE_FORMS) and (last in STATE_WORDS or last.endswith(PARTICIPLE_ENDINGS)))
            if closes_subject and end - start > 1 and end == _run_end(tokens, start):
                end -= 1  # "does the filter of the A7 last", "is the clinic open": the verb closes the subject
            lone_participle = end - start == 1 and word.endswith(PARTICIPLE_ENDINGS)
            if start > 0 and tokens[start - 1].group().lower() in DETERMINERS:
                start -= 1
            followed_by_determiner = end < len(tokens) and tokens[end].group().lower() in DETERMINERS
            if end - start == 1 and followed_by_determiner:
                lone_participle = True  # "Who *approves* an expense claim": a verb before its object
            if not lone_participle:
                parts.append(_part(body, tokens, start, end, prepositional=False))
            index = max(end, index + 1)
            continue
        index += 1
    return parts


def _noun_end(tokens: list[re.Match], index: int) -> int:
    """The end of a run of content words, taking "of [the] ..." with it ("the filter of the A7")."""
    end = index
    while end < len(tokens) and not _is_boundary(tokens[end].group()):
        end += 1
    if end + 1 < len(tokens) and tokens[end].group().lower() == "of":
        after = end + 1 + (tokens[end + 1].group().lower() in DETERMINERS)
        if after < len(tokens) and not _is_boundary(tokens[after].group()):
            return _noun_end(tokens, after)
    return end


def _run_end(tokens: list[re.Match], index: int) -> int:
    """Where the question's words run out after ``index`` (its end, or the next preposition)."""
    end = index
    while end < len(tokens) and tokens[end].group().lower() not in PREPOSITIONS:
        end += 1
    return end


def _is_boundary(word: str) -> bool:
    return is_grammar(word) or word.lower() in PREPOSITIONS or word.lower() == "of"


def _part(body: str, tokens: list[re.Match], start: int, end: int, *, prepositional: bool) -> Part:
    first, last = tokens[start].start(), tokens[end - 1].end()
    return Part(first, last, body[first:last], prepositional)


def subject_of(question: str) -> str:
    """The last question's subject: its first noun part that names something (a capitalised name or
    a code: "the blade of the Orbit B4"), else its first noun part ("the memo")."""
    nouns = [part for part in parts_of(question) if not part.prepositional]
    named = [part for part in nouns if any(w[:1].isupper() or any(c.isdigit() for c in w)
                                           for w in part.text.split()[1:] + part.text.split()[:1]
                                           if w.lower() not in DETERMINERS)]
    return (named or nouns)[0].text if nouns else ""


def _substitute(previous: str, phrase: str, similarity: Similarity, asked_about: bool = True) -> str | None:
    """The last question with ``phrase`` in place of the part it stands in for; with no such part,
    the phrase asked about the last question's subject when a lead ("And", "What about") says it goes
    on from there (``asked_about``), else None."""
    if not phrase:
        return previous
    body = previous.rstrip(" ?.!")
    parts = parts_of(previous)
    opener = phrase.split()[0].lower()
    bare = phrase.split(None, 1)[1] if opener in PREPOSITIONS and len(phrase.split()) > 1 else phrase
    same_opener = [p for p in parts if p.prepositional and p.text.split()[0].lower() == opener]
    if opener in PREPOSITIONS and len(same_opener) == 1:
        return _replaced(body, same_opener[0], phrase)
    candidates = same_opener or parts
    best = None
    if candidates:
        scores = list(similarity(bare, [_without_opener(p) for p in candidates]))
        top = max(range(len(candidates)), key=scores.__getitem__)
        best = candidates[top] if scores[top] >= MIN_PART_SIMILARITY else None
    if best is None:
        subject = subject_of(previous)
        if not asked_about:
            return None
        return f"{_capitalised(phrase)}, for {subject}?" if subject else f"{body} {phrase}?"
    if best.prepositional and opener not in PREPOSITIONS:  # "abroad" for "in Germany", but "the late
        return _replaced(body, best, phrase)               # shift" keeps "for" of "for the early shift"
    if not best.prepositional and opener in PREPOSITIONS:
        return _replaced(body, best, bare)  # "for interns" stands in for "full-time employees"
    return _replaced(body, best, phrase)


def _without_opener(part: Part) -> str:
    return part.text.split(None, 1)[1] if part.prepositional and " " in part.text else part.text


def _replaced(body: str, part: Part, phrase: str) -> str:
    if part.prepositional and phrase.split()[0].lower() not in PREPOSITIONS and not _is_place_word(phrase):
        opener_end = part.start + len(part.text.split()[0])
        return f"{body[:opener_end]} {phrase}{body[part.end:]}?"
    return f"{body[:part.start]}{phrase}{body[part.end:]}?"


def _is_place_word(phrase: str) -> bool:
    """A one-word adverb that stands for a whole prepositional part ("abroad", "online", "overseas")."""
    words = phrase.split()
    return len(words) == 1 and words[0].lower() in ADVERBIAL_PLACES


def _resolve_reference(question: str, previous: str, last_answer: str = "") -> str:
    subject = subject_of(previous)
    for token in _tokens(question):
        word = token.group().lower()
        if word not in REFERENCE_WORDS or word == "there":
            continue
        referent = subject
        asks_who_someone_is = re.match(r"\s*who\s+(?:is|was|are)\b", previous, re.IGNORECASE)
        if word in PERSON_WORDS and not asks_who_someone_is:  # "Who manages the hub?": he is its answer
            names = PERSON_NAME.findall(last_answer) or PERSON_NAME.findall(previous)
            referent = names[-1] if names else subject
        if not referent:
            return question
        owner = f"{referent}'s" if word in POSSESSIVES else referent
        return _capitalised(f"{question[:token.start()]}{owner}{question[token.end():]}".strip())
    return question
