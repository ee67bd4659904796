"""Whether a follow-up's rewrite may stand for it: the user's words kept, only the conversation's added.

A follow-up ("And on Sundays?", "Who signed it?") is searched and answered as the standalone question
it stands for (chains/condense.py). A rewrite that drops one of the user's words answers another
question ("the late shift" lost, the early one answered), and one that adds a word the conversation
never said invents a subject. So a rewrite passes only when every content word the user typed is in
it and every content word it adds was said earlier in the conversation. Words are compared after
lower-casing and a plural's "s", so "Sundays" matches "Sunday".

The reference words ("it", "they", "that"...) and the follow-up leads ("and", "what about") are the
words a rewrite replaces, so they need not be kept. They are English: in another language a rewrite
is held to the same rule, with that language's pronouns counted as words to keep (a stricter test).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from keel.core.text import STOPWORDS, WORD

# Words that point back to the conversation; a rewrite replaces them with what they point to (English).
REFERENCE_WORDS = frozenset(
    "it its they them their theirs that this those these he she him her his hers there same".split()
)
# Openings that mark a question as going on from the last one (English); matched as whole words.
FOLLOWUP_LEADS = (
    "and what about", "and how about", "what about", "how about", "what of", "and", "but", "also", "so", "then",
    "ok", "okay",
)
# Words a question is made of whatever it asks about: wh-words, auxiliaries and quantity words (English).
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were am be being been do does did can could "
    "will would shall should may might must have has had many much long often soon far old else about".split()
)
# Words that open a part of a question naming a day, place, group or condition (English).
PREPOSITIONS = frozenset(
    "on in at for during after before by with from to over under within outside inside per without via".split()
)
DETERMINERS = frozenset("the a an".split())
# A rewrite may run to the question plus the question it leans on, and this many words more.
EXTRA_REWRITE_WORDS = 8
# A question that points back ("Who signed it?") says at most this many words of its own subject; one
# that says more ("Does the V20's warranty cover its battery?") names what it asks about itself.
MAX_REFERRING_WORDS = 3
# A bare phrase ("The late shift?") is this many words at most, or it opens with a follow-up lead.
MAX_BARE_PHRASE_WORDS = 4

NOT_A_FOLLOWUP, LEAD_ONLY, REFERRING, BARE_PHRASE = "none", "lead_only", "referring", "bare_phrase"


@dataclass(frozen=True)
class RewriteProblem:
    """Why a rewrite cannot stand for the follow-up, and the words concerned."""

    code: str  # dropped_words, added_words, unresolved, too_long, not_a_question or empty
    words: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.code}:{','.join(self.words)}" if self.words else self.code


def stem(word: str) -> str:
    """The form words are compared in: lower case, no possessive, no plural s."""
    word = word.lower().strip("'-")
    if word.endswith("'s"):
        word = word[:-2]
    if word in STOPWORDS or word in REFERENCE_WORDS or word in QUESTION_WORDS:
        return word
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def meaning_words(text: str) -> set[str]:
    """The stems of the words that say what a question is about (not its grammar, nor references)."""
    return {stem(word) for word in WORD.findall(text) if not is_grammar(word)}


def is_acronym(word: str) -> bool:
    """A word written in capitals ("IT", "US"): an acronym, not the word it spells."""
    return len(word) > 1 and word.isupper()


def is_grammar(word: str) -> bool:
    """A function, reference or question word: no part of what a question is about. A word in
    capitals is an acronym ("IT", "US"), never the pronoun it spells."""
    if is_acronym(word):
        return False
    lowered = stem(word)
    return lowered in STOPWORDS or lowered in REFERENCE_WORDS or lowered in QUESTION_WORDS


def strip_lead(question: str) -> tuple[str, str]:
    """(the lead, the rest): "And on Sundays?" -> ("And", "on Sundays?"). No lead: ("", question)."""
    text = question.strip()
    lowered = text.lower()
    for lead in FOLLOWUP_LEADS:
        if re.match(rf"{re.escape(lead)}\b", lowered):
            rest = text[len(lead):].lstrip(" ,;:-")
            if rest:
                return text[: len(lead)], rest
    return "", text


def rewrite_problem(question: str, rewrite: str, conversation: Iterable[str]) -> RewriteProblem | None:
    """None when ``rewrite`` may stand for the follow-up ``question`` given the earlier ``conversation``
    (its questions and answers); else what is wrong with it."""
    if not rewrite.strip():
        return RewriteProblem("empty")
    _, asked = strip_lead(question)
    if question.strip().endswith("?") and not rewrite.strip().endswith("?"):
        return RewriteProblem("not_a_question")  # an answer written instead ("The clinic is open ...")
    kept = meaning_words(rewrite)
    dropped = sorted(meaning_words(asked) - kept)
    if dropped:
        return RewriteProblem("dropped_words", tuple(dropped))
    earlier = list(conversation)
    said = set().union(*(meaning_words(text) for text in earlier)) if earlier else set()
    added = sorted(kept - meaning_words(question) - said)
    if added:
        return RewriteProblem("added_words", tuple(added))
    if followup_kind(question) in (REFERRING, BARE_PHRASE) and not (kept - meaning_words(question)):
        return RewriteProblem("unresolved")  # nothing of the conversation filled in what it points back to
    longest_earlier = max((len(WORD.findall(text)) for text in earlier), default=0)
    if len(WORD.findall(rewrite)) > len(WORD.findall(question)) + longest_earlier + EXTRA_REWRITE_WORDS:
        return RewriteProblem("too_long")
    return None


def followup_kind(question: str) -> str:
    """How a question leans on the conversation: REFERRING ("Who signed it?"), BARE_PHRASE ("And on
    Sundays?", "What about abroad?", "The late shift?"), LEAD_ONLY ("And how much is the A7?": a whole
    question after a lead) or NOT_A_FOLLOWUP ("Thanks!", "List all fees"). English cues."""
    lead, rest = strip_lead(question)
    words = WORD.findall(rest)
    stems = [stem(word) for word in words]
    asks = any(word in QUESTION_WORDS for word in stems)
    refers = any(stem(word) in REFERENCE_WORDS and not is_acronym(word) for word in words)
    if refers and len(meaning_words(rest)) <= MAX_REFERRING_WORDS:
        return REFERRING
    # without a lead, only a phrase that opens like a part of a question ("The late shift?", "On Sundays?"),
    # not "Thanks!" or "List all fees"
    opens_a_part = bool(words) and words[0].lower() in PREPOSITIONS | DETERMINERS
    if words and not asks and (lead or (opens_a_part and len(words) <= MAX_BARE_PHRASE_WORDS)):
        return BARE_PHRASE
    return LEAD_ONLY if lead else NOT_A_FOLLOWUP
