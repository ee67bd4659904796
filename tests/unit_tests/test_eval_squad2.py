"""`keel eval squad2` on a tiny SQuAD 2.0 file the test writes, through the real graph and parts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from keel.evals.squad2 import Outcome, contains_gold, load_squad, metrics, normalize, sample_questions

ROOT = Path(__file__).resolve().parents[2]

TINY = {
    "version": "v2.0",
    "data": [
        {
            "title": "Varden_Island",
            "paragraphs": [
                {
                    "context": "The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
                    "Its lamp can be seen from 22 nautical miles away.",
                    "qas": [
                        {"id": "q1", "question": "Who built the Varden lighthouse?", "is_impossible": False,
                         "answers": [{"text": "Mara Holt", "answer_start": 47}]},
                        {"id": "q2", "question": "Who painted the Varden lighthouse in 1990?", "is_impossible": True,
                         "answers": []},
                    ],
                },
                {
                    "context": "The island school has 48 pupils and two teachers. The ferry leaves every morning at 7 am.",
                    "qas": [
                        {"id": "q3", "question": "How many pupils does the island school have?",
                         "is_impossible": False, "answers": [{"text": "48", "answer_start": 22}]},
                    ],
                },
            ],
        }
    ],
}


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
    path.write_text(json.dumps(TINY))
    articles, questions = load_squad(path)
    assert [a.title for a in articles] == ["Varden Island"] and len(articles[0].paragraphs) == 2
    assert sample_questions(questions, 2, seed=7) == sample_questions(questions, 2, seed=7)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a SQuAD 2.0 file"):
        load_squad(bad)


@pytest.mark.real
def test_keel_eval_squad2_cli_on_a_tiny_file(keel_home, redis_url, mongodb_uri, llm_endpoint, tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    completed = subprocess.run(
        [sys.executable, "-m", "keel.cli.main", "eval", "squad2", str(path), "--json", "--report", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)
    assert set(result) == {"answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate",
                           "leak_rate", "confidently_wrong_rate", "mean_latency_s", "mean_attempts", "questions"}
    assert result["questions"] == 3
    assert result["leak_rate"] == 0.0
    assert result["answerable_correct"] >= 0.5  # retrieval plus the extractive fallback carry these
    assert (tmp_path / "r" / "squad2.png").stat().st_size > 1000
    report = json.loads((tmp_path / "r" / "squad2.json").read_text())
    assert len(report["outcomes"]) == 3
