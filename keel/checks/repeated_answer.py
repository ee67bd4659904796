"""An answer that only says again what the last answer said is an answer to the last question.

In a conversation the earlier turns are in the answer prompt, and a small model asked "And for
Facilities?" after "What is the on-call allowance for the IT Service Desk?" writes the IT figure again.
Such an answer is grounded (it quotes the documents) and fits the question's type (a sum), so no other
check stops it; what gives it away is that it adds no statement the last answer did not make.

Not a repeat: an answer with a statement of its own, or a question that asks nothing the last one
did not (the same question again, in any words, or with "again": the same answer is then right).
It compares words, so it works in any language; the few words that ask again are English.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from keel.core.text import CITATION_PATTERN, content_words, split_sentences

REPEATS_LAST_ANSWER = "repeats_last_answer"
# An answer repeats the last one when each of its sentences has at least this share of its content
# words in that answer: 1.0 would let a changed article or a reordered clause through.
SAME_STATEMENT_SHARE = 0.9
ASKING_AGAIN = frozenset({"again", "repeat", "remind"})  # "Who built it, again?" wants the same answer


def repeats_last_answer(answer: str, question: str, history: Sequence[AnyMessage]) -> bool:
    """Whether every sentence of ``answer`` is one the last answer in ``history`` already made,
    while ``question`` asks something the last question did not."""
    last_answer = next((m for m in reversed(history) if isinstance(m, AIMessage)), None)
    last_question = next((m for m in reversed(history) if isinstance(m, HumanMessage)), None)
    if last_answer is None or not _text(last_answer).strip():
        return False
    if last_question is not None and not content_words(question) - content_words(_text(last_question)) - ASKING_AGAIN:
        return False  # it asks nothing the last question did not: the same answer may be right
    said = content_words(_text(last_answer))
    sentences = [content_words(s) for s in split_sentences(CITATION_PATTERN.sub(" ", answer))]
    sentences = [words for words in sentences if words]
    return bool(sentences) and all(len(words & said) >= SAME_STATEMENT_SHARE * len(words) for words in sentences)


def _text(message: AnyMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)
