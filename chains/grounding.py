"""Is an answer supported by its context? Sentence-level grounding (seed 004), citations and focus.

Pure functions: the caller passes the passages and, where embeddings are needed, a similarity
function, so the checks run the same in the graph, in `keel eval` and in tests.
"""

from __future__ import annotations

from typing import Callable, Sequence

from chains.text import content_words, split_sentences


def word_overlap(sentence: str, passage: str) -> float:
    """Share of the sentence's content words that appear in the passage (seed 004)."""
    words = content_words(sentence)
    if not words:
        return 1.0
    return len(words & content_words(passage)) / len(words)


def grounding_score(answer: str, passages: Sequence[str], min_overlap: float) -> float:
    """Grounded sentences / sentences; a sentence is grounded when some passage covers it."""
    sentences = [s for s in split_sentences(answer) if content_words(s)]
    if not sentences:
        return 0.0
    grounded = sum(1 for s in sentences if any(word_overlap(s, p) >= min_overlap for p in passages))
    return grounded / len(sentences)


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
    """
    context = [s for text in passages for s in split_sentences(text) if len(content_words(s)) >= 2]
    answer_sentences = [s for s in split_sentences(answer) if content_words(s)]
    if not context or not answer_sentences:
        return 0.0
    relevance = list(similarities(question, context))
    best = max(relevance)
    if best <= 0:
        return 0.0
    evidence = []
    for sentence in answer_sentences:
        overlaps = [word_overlap(sentence, c) for c in context]
        evidence.append(relevance[max(range(len(context)), key=lambda i: (overlaps[i], relevance[i]))])
    return round(max(evidence) / best, 4)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
    return dot / norm if norm else 0.0
