"""The quote report's counting (keel/evals/extractive_quotes.py): which kind each quote is, after the
answer-fit checks, and the counts inside and outside the eval sample. Its run on real retrieval is in
integration_tests/test_answerability.py."""

from __future__ import annotations

from keel.core.configuration import Configuration
from keel.evals.extractive_quotes import quote_kind, summarize
from keel.evals.squad2 import Question

CFG = Configuration()
CONTEXT = ["In 1066, Duke William II of Normandy conquered England, killing King Harold II at Hastings."]


def _question(text: str, answers: list[str]) -> Question:
    return Question(qid="q", article="Normans", question=text, answers=answers, impossible=not answers)


def test_each_quote_is_right_without_the_gold_an_unanswerable_one_quoted_or_an_abstention():
    quote = f"{CONTEXT[0]} [Source 1]"
    assert quote_kind(_question("Who killed Harold II?", ["William II"]), quote, CONTEXT, CFG) == "right"
    assert quote_kind(_question("Who killed Harold II?", ["Tostig"]), quote, CONTEXT, CFG) == "without_gold"
    assert quote_kind(_question("Who killed Harold III?", []), quote, CONTEXT, CFG) == "unanswerable_quoted"
    assert quote_kind(_question("Who killed Harold II?", ["William II"]), CFG.fallback_answer, CONTEXT,
                      CFG) == "abstained"


def test_a_quote_the_answer_checks_refuse_counts_as_an_abstention():
    """An answer of the wrong type is retried, then "I don't know": the quote is not shown."""
    quote = f"{CONTEXT[0]} [Source 1]"
    assert quote_kind(_question("How many soldiers fought at Hastings?", ["7,000"]), quote, CONTEXT,
                      CFG) == "abstained"


def test_counts_are_kept_apart_for_the_eval_sample():
    rows = [{"qid": "a", "floor": "right", "set": "right"}, {"qid": "b", "floor": "unanswerable_quoted",
                                                              "set": "abstained"},
            {"qid": "c", "floor": "without_gold", "set": "without_gold"}]
    counts = summarize(rows, ["floor", "set"], sample={"c"})
    assert counts["outside_sample"]["floor"] == {"right": 1, "without_gold": 0, "unanswerable_quoted": 1,
                                                 "abstained": 0}
    assert counts["outside_sample"]["set"]["abstained"] == 1
    assert counts["sample"]["set"] == {"right": 0, "without_gold": 1, "unanswerable_quoted": 0, "abstained": 0}
