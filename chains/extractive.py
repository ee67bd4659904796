"""The extractive last attempt: the context statements closest to the question that fit it, quoted
with their citations, and no model call. It answers only when a quote reads as an answer to the
question; else it answers with the fallback ("I don't know"), never with the best of a far-off
context: a sentence of the asked type from the right page is what an unanswerable question has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from keel.checks.answer_checks import best_supported_sentences
from keel.checks.answer_fit import (
    best_question_coverage,
    quoted_about_asked,
    read_context,
    sentence_fits,
)
from keel.checks.answer_topic import topic_shares
from keel.checks.question_coverage import context_vocabulary, question_coverage
from keel.checks.siblings import about_a_sibling
from keel.checks.statements import Statement, statements, statements_for, under_headings
from keel.core.configuration import Configuration
from keel.core.text import CITATION_PATTERN

Similarity = Callable[[str, list[str]], list[float]]


def extractive_answer(question: str, passages: Sequence[tuple[int, str]], cfg: Configuration,
                      embedded: Similarity) -> str:
    """The quoted statements, each with its [Source N], or ``cfg.fallback_answer``. Statements are
    ranked as read under their headings; "close" is judged on them as written and as read there."""
    context = statements(text for _, text in passages)
    vocabulary = context_vocabulary(context)
    read_as: dict[str, str] = {}
    fits = quote = None
    if cfg.extractive_requires_fit:  # quote only a sentence of the asked type, about the asked entity
        read = read_context(context)
        read_as = under_headings(context)
        enough = max(cfg.min_question_coverage, best_question_coverage(
            question, context, vocabulary, cfg.unused_question_word_weight))
        fits = _unless_a_sibling_leads(question, read, cfg.refuse_sibling_evidence, lambda sentence: sentence_fits(
            sentence, question, context, vocabulary, enough, read, cfg.unused_question_word_weight))
        quote = lambda sentence: quoted_about_asked(sentence, question)  # noqa: E731
    best_similarity = 0.0

    def similarities(question: str, sentences: list[str]) -> list[float]:
        nonlocal best_similarity
        under = [read_as.get(s, s) for s in sentences]
        scores = embedded(question, [*sentences, *under] if read_as else sentences)
        best_similarity = max(scores[:len(sentences)], default=0.0)  # "close" is the embedding's word
        ranked = scores[len(sentences):] if read_as else scores
        weight = cfg.topic_relevance_weight  # the question's topic words count, as for the evidence checks,
        # here read under their headings as the embedding reads them
        return [score + weight * share for score, share in zip(ranked, topic_shares(question, under), strict=False)]

    sentences = best_supported_sentences(question, passages, cfg.extractive_sentences, similarities, fits, quote)
    if not sentences or best_similarity < cfg.relevance_threshold:
        return cfg.fallback_answer
    quoted = [CITATION_PATTERN.sub(" ", sentence).strip() for sentence in sentences]
    if not _some_reads_as_answer(question, quoted, read_as, context, vocabulary, cfg, embedded):
        return cfg.fallback_answer
    return " ".join(sentences)


def _unless_a_sibling_leads(question: str, read, refuse: bool, fits: Callable[[str], bool]) -> Callable[[str], bool]:
    """``fits``, tried in ranking order, that stops at the first fitting line about a sibling of what
    was asked: when the closest answer of the asked type is the band B row for a band D question,
    the documents speak of the siblings, and the next line down ("Probation may be extended by up to
    3 months") is no answer either."""
    if not refuse:
        return fits
    led: list[str] = []

    def fits_unless_led(sentence: str) -> bool:
        if led or not fits(sentence):
            return False
        if about_a_sibling(sentence, question, read[0]):
            led.append(sentence)
            return False
        return True

    return fits_unless_led


def _some_reads_as_answer(question: str, quoted: list[str], read_as: dict[str, str], context: Sequence[Statement],
                          vocabulary: set[str], cfg: Configuration, embedded: Similarity) -> bool:
    """Does one quote, as written or read under its headings, read close to the question: very close
    (``min_uncovered_quote_similarity``), or close (``min_quote_similarity``) while it says, with its
    headings and list item, ``min_question_coverage`` of what the question is about? A question the
    documents do not answer is often worded like one of their sentences with one thing changed
    (another century, another field, "output" for "input"); the best sentence of its page is then
    about something else and reads at about 0.5 to 0.6. A sentence that answers reads closer, or
    says the question's words."""
    scores = embedded(question, [*quoted, *(read_as.get(text, text) for text in quoted)])
    closeness = [max(pair) for pair in zip(scores[:len(quoted)], scores[len(quoted):], strict=False)]
    statements_of = statements_for(context)

    def covers(text: str) -> bool:
        settings = [s.setting for s in statements_of(text)] or [""]
        return max(question_coverage(text, question, setting, vocabulary, cfg.unused_question_word_weight)
                   for setting in settings) >= cfg.min_question_coverage

    return any(similarity >= cfg.min_uncovered_quote_similarity
               or (similarity >= cfg.min_quote_similarity and covers(text))
               for text, similarity in zip(quoted, closeness, strict=False))
