"""Can the context answer this question? Evidence checks before any model call, so an
unanswerable question gets the fallback instead of a guess.

Retrieval confidence says the context is *about* the question; it cannot tell "the documents
say when Dyrrachium fell" from "the documents say when Dyrrachium fell, and you asked who
rebuilt it". Grounding cannot either: a quoted context sentence is always grounded. So before
generating, Keel finds the evidence the answer would rest on (the ``evidence_sentences`` context
sentences closest to the question, the same ones the extractive answer quotes, and the closest one
of every other document in the context) and asks two questions of it:

- do the names and numbers the question asks about appear in the evidence (with the document's
  name)? A question about "the 10th century" or "Cnut the Great" whose evidence names neither is
  about something the documents do not say;
- is a negated question ("What is *not* contained in PSPACE?") met by evidence that states a
  negation or exclusion at all? Otherwise the evidence answers the question's positive twin.

Both are calibrated on the SQuAD 2.0 dev set (``python -m keel.evals.answerability``,
docs/grounding.md): together they stop 35% of its unanswerable questions and 10% of the
answerable ones, but only 5% of the answerable ones whose evidence holds the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from keel.checks.answer_checks import ranked_context_sentences
from keel.checks.answer_topic import says_word, topic_relevance, topic_shares, topic_words
from keel.checks.answer_types import expected_answer_type, has_answer_of_type
from keel.checks.grounding import question_terms, question_terms_missing, says_terms
from keel.checks.statements import Statement, statements, statements_for
from keel.core.settings.grounding import GroundingSettings

TERMS_NOT_IN_EVIDENCE = "question_terms_not_in_evidence"
NEGATION_NOT_IN_EVIDENCE = "negation_not_in_evidence"


def evidence_sentences(
    question: str,
    passages: Sequence[tuple[int, str]],
    limit: int,
    similarities: Callable[[str, list[str]], list[float]] | None,
    sources: Mapping[int, str] | None = None,
    read_as: Callable[[str], list[Statement]] | None = None,
) -> list[tuple[int, str]]:
    """The ``limit`` context sentences an answer to the question would rest on, most relevant first,
    plus, when ``sources`` (passage number → document) is given, the best sentence of every other
    document in the context: a question that compares two documents has evidence in each; and,
    when those miss a name or number of the question, the best sentence that, read under its
    headings, says them all and something of the rest of the question: "Who is Corvan Home's Chief
    Technology Officer?" rests on the line that says "Chief Technology Officer" under "About Corvan
    Home", however close the others are, while "How far can Jon Berg see the lamp?" does not rest on
    "The harbour master is Jon Berg."."""
    ranked = ranked_context_sentences(question, passages, similarities)
    chosen = ranked[:limit]
    if sources:
        seen = {sources.get(number) for number, _ in chosen}
        for number, sentence in ranked[limit:]:
            if sources.get(number) not in seen:
                seen.add(sources.get(number))
                chosen.append((number, sentence))
    terms = question_terms(question)
    if not terms:
        return chosen
    read_as = read_as or statements_for(statements(text for _, text in passages))
    lacking = terms - set().union(*(says_terms(_under_headings(sentence, read_as)) for _, sentence in chosen))
    topic = topic_words(question)  # where the question says more than names, the line says some of that too
    extra = next((candidate for candidate in ranked if candidate not in chosen and lacking & says_terms(candidate[1])
                  and terms <= says_terms(_under_headings(candidate[1], read_as))
                  and (not topic or topic_shares(question, [candidate[1]])[0] > 0)), None) if lacking else None
    return chosen + [extra] if extra else chosen


def _under_headings(sentence: str, read_as: Callable[[str], list[Statement]]) -> str:
    """The sentence with the headings above it, as a reader takes it in."""
    return " ".join([*dict.fromkeys(s.headings for s in read_as(sentence)), sentence])


def evidence_gaps(
    question: str,
    passages: Sequence[tuple[int, str]],
    sources: Sequence[str],
    cfg: GroundingSettings,
    similarities: Callable[[str, list[str]], list[float]] | None = None,
) -> list[str]:
    """Reason codes for what the evidence lacks; empty when it may answer the question.

    ``passages`` are (number, text) pairs and ``sources`` their document names, index for index: a
    question may name the document ("What does the Keel handbook say ...") rather than its text.
    """
    names = {number: source for (number, _), source in zip(passages, sources, strict=False)}
    read_as = statements_for(statements(text for _, text in passages))
    relevance = topic_relevance(similarities, cfg.topic_relevance_weight) if similarities else None
    ranked = evidence_sentences(question, passages, cfg.evidence_sentences, relevance, names, read_as)
    if not ranked:
        return []
    evidence = [f"{names.get(number, '')} {_under_headings(sentence, read_as)}" for number, sentence in ranked]
    reasons = []
    missing = question_terms_missing(question, evidence)
    if missing:
        reasons.append(f"{TERMS_NOT_IN_EVIDENCE}:{','.join(missing)}")
    if _matches(cfg.question_negation_pattern, question) and not any(
        _matches(cfg.evidence_negation_pattern, sentence) for _, sentence in ranked
    ):
        reasons.append(NEGATION_NOT_IN_EVIDENCE)
    return reasons


def _matches(pattern: str, text: str) -> bool:
    return bool(pattern) and re.search(pattern, text, re.IGNORECASE) is not None


def states_whole_question(question: str, passages: Sequence[str]) -> bool:
    """Does one statement of the context, read in its setting (headings, list item), say every word and name the
    question asks about and hold an answer of the type it asks for? Then the search found what was
    asked, however far the embeddings put the two: a short question reads far from a long table
    row ("How much does a pack of 3 Vela filters cost?" and the accessories row that prices it).
    Questions of no particular type ("What is France a region of?") never count: a look-alike
    question written from a paragraph's own words says them all too."""
    kinds = expected_answer_type(question)
    asked = topic_words(question) | question_terms(question)
    if not kinds or not asked:
        return False
    for statement in statements(passages):
        if not has_answer_of_type(statement.unit or statement.text, kinds):
            continue
        said = says_terms(f"{statement.setting} {statement.unit or statement.text}")
        if all(says_word(word, said) for word in asked):
            return True
    return False


def too_unsure(question: str, passages: Sequence[str], confidence: float, cfg: GroundingSettings) -> bool:
    """The retrieval-confidence gate: below ``min_confidence``, unless one statement says the whole
    question (``states_whole_question``) and ``whole_question_waives_confidence`` lets that count."""
    return confidence < cfg.min_confidence and not (
        cfg.whole_question_waives_confidence and states_whole_question(question, passages))
