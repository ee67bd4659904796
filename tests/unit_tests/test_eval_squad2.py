"""`keel eval squad2`'s SQuAD normalisation, metrics, loading and seeded sampling on a tiny file the test writes;
the command through the real graph and parts is in integration_tests/test_eval_squad2.py."""

from __future__ import annotations

import json

import pytest

from keel.evals.scoring import Outcome, contains_gold, metrics, normalize
from keel.evals.squad2 import load_squad, sample_questions
from tests.eval_files import TINY_SQUAD


def test_squad_normalisation_and_metrics():
    assert normalize("The  Mara-Holt!") == "maraholt"
    assert contains_gold("It was built by Mara Holt [Source 1].", ["Mara Holt"])
    assert not contains_gold("I don't know.", ["Mara Holt"])
    outcomes = [
        Outcome("a", "q", False, ["x"], "x", "success", 1, 1.0, correct=True, grounded=True),
        Outcome("b", "q", False, ["y"], "I don't know", "insufficient_context", 0, 0.5),
        Outcome("c", "q", True, [], "I don't know", "low_confidence", 0, 0.5),
        Outcome("d", "q", True, [], "made up", "success", 3, 2.0, grounded=False),
    ]
    m = metrics(outcomes)
    assert m["answerable_correct"] == 0.5 and m["false_abstention_rate"] == 0.5
    assert m["abstention_rate"] == 0.5 and m["ungrounded_rate"] == 0.5
    assert m["mean_attempts"] == 1.0 and m["questions"] == 4
    assert m["confidently_wrong_rate"] == 0.25  # "d": an unanswerable question answered, of all 4


def test_loading_and_seeded_sampling(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY_SQUAD))
    articles, questions = load_squad(path)
    assert [a.title for a in articles] == ["Varden Island"] and len(articles[0].paragraphs) == 2
    assert sample_questions(questions, 2, seed=7) == sample_questions(questions, 2, seed=7)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a SQuAD 2.0 file"):
        load_squad(bad)
