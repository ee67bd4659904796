"""Is an answer supported by its context? Sentence-level grounding, citations and focus.

Pure functions: the caller passes the passages and, where embeddings are needed, a similarity
function, so the checks run the same in the graph, in `keel eval` and in tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from keel.checks.statements import HEADING, entity_codes, statements
from keel.core.settings.grounding import GroundingSettings
from keel.core.text import (
    CITATION_PATTERN,
    STOPWORDS,
    WORD,
    content_words,
    figures,
    split_sentences,
    split_statements,
)


def word_overlap(sentence: str, passage: str) -> float:
    """Share of the sentence's content words that appear in the passage."""
    words = content_words(sentence)
    if not words:
        return 1.0
    return len(words & content_words(passage)) / len(words)


@dataclass
class SentenceVerdict:
    """Whether one answer sentence is supported by the passages, and by which."""
    sentence: str
    grounded: bool
    support: float  # share of the sentence's new content words found in the best passage
    passage: int | None  # index of the passage that supports it best
    missing: list[str] = field(default_factory=list)  # names and numbers no passage contains
    similarity: float | None = None  # embedding similarity, when the paraphrase rule was tried


@dataclass
class GroundingReport:
    """The share of an answer's sentences the passages support, sentence by sentence."""
    score: float  # grounded sentences / sentences; passes at grounding_threshold
    sentences: list[SentenceVerdict]

    def passes(self, threshold: float) -> bool:
        return self.score >= threshold


def verify_grounding(
    answer: str,
    passages: Sequence[str],
    *,
    question: str = "",
    min_overlap: float = 0.5,
    similarities: Callable[[str, list[str]], list[float]] | None = None,
    min_similarity: float = 0.8,
) -> GroundingReport:
    """Sentence-level grounding verification, hardened against fluent inventions.

    A sentence is grounded when (1) every name and number it introduces appears in the context (a
    number as a whole figure: "20" is not in "20,000") and
    (2) its new content words (those not already in the question) overlap some passage by at least
    ``min_overlap``, or, for paraphrases, at least half of that overlap and the sentence is
    semantically close (>= ``min_similarity``) to a context sentence. Names and numbers are where inventions live, so they are never waived by
    similarity. The answer's length or form plays no part.
    """
    question_words = stems(content_words(question))
    passage_words = [stems(content_words(p)) | figures(p) for p in passages]  # "20000" is in "20,000"
    all_words = set().union(*passage_words) if passage_words else set()
    # whole figures: "20" is not grounded by "20,000", though its word "20" is in the context
    all_figures = set().union(*(figures(p) for p in passages)) if passages else set()
    asked_figures = figures(question)
    verdicts: list[SentenceVerdict] = []
    for sentence in (s for s in split_sentences(answer) if content_words(s)):
        new_words = stems(content_words(sentence)) - question_words
        names = {t for t in critical_tokens(sentence) if not t.isdigit()}  # plain numbers: as figures
        missing = sorted((names & new_words - all_words) | (figures(sentence) - asked_figures - all_figures))
        if not new_words:  # restates the question's own terms: adds no claim to verify
            verdicts.append(SentenceVerdict(sentence, True, 1.0, None))
            continue
        supports = [len(new_words & words) / len(new_words) for words in passage_words]
        best = max(range(len(supports)), key=supports.__getitem__) if supports else None
        support = supports[best] if best is not None else 0.0
        verdict = SentenceVerdict(sentence, not missing and support >= min_overlap, support, best, missing)
        # The paraphrase waiver needs a lexical anchor: some of the new words must be in the context.
        anchored = support >= min_overlap / 2
        if not verdict.grounded and not missing and anchored and similarities is not None and passages:
            context_sentences = [c for p in passages for c in split_sentences(p)] or list(passages)
            verdict.similarity = max(similarities(sentence, context_sentences), default=0.0)
            verdict.grounded = verdict.similarity >= min_similarity
        verdicts.append(verdict)
    if not verdicts:  # nothing verifiable ("Yes.", an empty answer): other checks judge it
        return GroundingReport(1.0, verdicts)
    score = sum(v.grounded for v in verdicts) / len(verdicts)
    return GroundingReport(round(score, 4), verdicts)


def question_terms(question: str) -> set[str]:
    """The names and numbers a question asks about, stemmed and without accents."""
    tokens = WORD.findall(CITATION_PATTERN.sub(" ", _plain(question)))[1:]  # the first word opens it
    return {_stem(t[:-1]) if t.endswith("'") else t for t in critical_tokens(" ".join(tokens))}


def says_terms(text: str) -> set[str]:
    """The stems a text offers to ``question_terms`` (accents ignored)."""
    return stems(content_words(_plain(text)))


def question_terms_missing(question: str, passages: Sequence[str]) -> list[str]:
    """Names and numbers the question asks about that no passage contains (accents ignored): the
    context cannot be about them, so there is nothing to answer from ("...visitors in 2019?")."""
    present = set().union(*(says_terms(p) for p in passages)) if passages else set()
    return sorted(question_terms(question) - present)


def _plain(text: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def adds_claim(answer: str, question: str) -> bool:
    """Does the answer say anything beyond the question's own words? "2019" to "How many visitors
    came in 2019?" is grounded trivially (every word is the question's) but answers nothing."""
    return bool(stems(content_words(answer)) - stems(content_words(question)))


def check_grounding(
    answer: str,
    passages: Sequence[str],
    cfg: GroundingSettings,
    question: str = "",
    similarities: Callable[[str, list[str]], list[float]] | None = None,
) -> GroundingReport:
    """THE grounding check, with the configured thresholds: the graph's validate_answer and
    `keel eval halueval` both call this, so what the eval measures is what the graph enforces."""
    return verify_grounding(
        answer, passages, question=question, min_overlap=cfg.grounding_word_overlap,
        similarities=similarities, min_similarity=cfg.grounding_semantic_similarity,
    )


def stems(words: set[str]) -> set[str]:
    """A light, language-agnostic normalisation so 'claims' supports 'claim' and 'built' 'build'."""
    return {_stem(w) for w in words}


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


# Capitalised only because they open a sentence; never names.
SENTENCE_OPENERS = frozenset(
    "however also additionally furthermore moreover yes according based overall finally first second third "
    "then there here both neither either while although because since if when where what which who how "
    "in on at for from after before during some many most all each every one".split()
)


def critical_tokens(sentence: str) -> set[str]:
    """Numbers and capitalised words: the names, dates and amounts a claim stands on."""
    tokens = WORD.findall(CITATION_PATTERN.sub(" ", sentence))
    critical = set()
    for position, token in enumerate(tokens):
        has_digit = any(ch.isdigit() for ch in token)
        lowered = token.lower()
        opener = position == 0 and lowered in SENTENCE_OPENERS
        is_name = token[:1].isupper() and lowered not in STOPWORDS and not opener
        if has_digit or is_name:
            critical.add(_stem(token))
    return critical


def answer_focus(
    answer: str,
    passages: Sequence[str],
    question: str,
    similarities: Callable[[str, list[str]], list[float]],
) -> float:
    """Does the answer come from the part of the context that answers the question?

    Each answer sentence is traced to the context sentence it overlaps most (its evidence). The
    focus is how relevant the best such evidence is to the question, relative to the most relevant
    context sentence: 1.0 when the answer rests on the best evidence, low when a grounded answer
    quotes a part of the context that does not answer the question (a title, another topic).
    The context is read in statements (a table row, a list item, a sentence), the units the
    extractive answer quotes: a spec table read as one run-on "sentence" is relevant to nothing,
    so an answer quoting its right row would seem off the question. When the question names a
    model or code ("E4", "AX5400"), the best is sought among the statements about it: the error
    table's E4 row answers "What does E4 mean?" though the page's introduction to errors reads
    closer to the question.
    """
    context = [s for text in passages for s in split_statements(text)
               if len(content_words(s)) >= 2 and not HEADING.match(s)]  # a heading names a topic, answers nothing
    # A citation ends a claim: the extractive answer's quotes follow one another without a full stop.
    answer_sentences = [s for cited in re.split(r"(?<=\])\s+", answer) for s in split_sentences(cited)
                        if content_words(s)]
    if not context or not answer_sentences:
        return 0.0
    relevance = list(similarities(question, context))
    best = max(relevance)
    asked = entity_codes(question)
    about = {st.unit for st in statements(passages) if st.entities & asked} if asked else set()
    best_about = max((r for sentence, r in zip(context, relevance, strict=False) if sentence in about), default=best)
    if best <= 0 or best_about <= 0:
        return 0.0
    focus = 0.0
    for sentence in answer_sentences:
        overlaps = [word_overlap(sentence, c) for c in context]
        evidence = max(range(len(context)), key=lambda i: (overlaps[i], relevance[i]))
        # a statement about the named code is measured against the best of those, any other against the best of all
        focus = max(focus, relevance[evidence] / (best_about if context[evidence] in about else best))
    return round(min(1.0, focus), 4)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
    return dot / norm if norm else 0.0
