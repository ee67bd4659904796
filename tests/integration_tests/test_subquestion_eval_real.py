"""`keel eval subquestions` on the real parts: a small compound-question set ingested into the real
Redis Stack with the real embeddings, each question routed by the graph's route_query and asked
through keel ask's graph with the real SmolLM2 server."""

from __future__ import annotations

import json

import pytest

from keel.cli import running
from keel.evals import subquestion_recall

pytestmark = pytest.mark.real


def _compound_set(folder):
    (folder / "specs.md").write_text("# Zeta Z1 specifications\n\nThe Zeta Z1 weighs 2.1 kg.\n")
    (folder / "prices.md").write_text("# Price list\n\nThe Zeta Z1 costs 199 euros.\n")
    (folder / "ferry.md").write_text("# Ferry\n\nThe ferry to the mainland leaves every morning at 7 am.\n")
    questions = [
        {"id": "c1", "question": "What are the weight and the price of the Zeta Z1?", "parts": [["2.1 kg"], ["199"]]},
        {"id": "c2", "question": "How much does the Zeta Z1 weigh and what does it cost?", "parts": [["2.1 kg"], ["199"]]},
        {"id": "s1", "question": "When does the ferry to the mainland leave?", "parts": [["7 am"]]},
    ]
    path = folder / "compound.json"
    path.write_text(json.dumps({"documents": ["specs.md", "prices.md", "ferry.md"], "questions": questions}))
    return path


def test_the_rules_split_is_scored_and_asked_as_keel_ask_asks(tmp_path, llm_endpoint):
    path = _compound_set(tmp_path)
    result = subquestion_recall.measure(path, ["rules"], lambda cfg: (running.graph_with_history(cfg), running.run_config))
    [rules] = result["results"]
    rows = {row["id"]: row for row in rules["rows"]}
    assert rows["c1"]["subquestions"] == ["What are the weight and the price of the Zeta Z1?"]  # the rules keep it whole
    assert rows["c2"]["subquestions"] == ["How much does the Zeta Z1 weigh?", "what does it cost?"]
    assert rules["compound_split_right"] == 0.5 and rules["single_kept_whole"] == 1.0
    found = [position is not None for row in rows.values() for position in row["first_passage"]]
    assert rules["part_recall"] == round(sum(found) / len(found), 4) and rows["s1"]["first_passage"] == [0]
    assert all(row["status"] for row in rows.values())  # every question went through the whole graph
    answered = [hold for row in rows.values() for hold in row["holds"]]
    assert rules["parts_answered"] == round(sum(answered) / len(answered), 4)
    assert "| rules |" in subquestion_recall.table(result["results"])


def test_a_bad_set_or_policy_is_refused_before_anything_is_ingested(tmp_path):
    path = _compound_set(tmp_path)
    with pytest.raises(ValueError, match="unknown policy 'fast'"):
        subquestion_recall.measure(path, ["fast"])
    with pytest.raises(ValueError, match="no chat model 'gpt-9' in the pool"):
        subquestion_recall.measure(path, ["rules", "model:gpt-9"])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not a JSON file"):
        subquestion_recall.measure(broken, ["rules"])
    broken.write_text(json.dumps({"documents": ["ferry.md"], "questions": [{"question": "When?", "parts": ["7 am"]}]}))
    with pytest.raises(ValueError, match="question 1 needs a question and parts"):
        subquestion_recall.measure(broken, ["rules"])
    (tmp_path / "ferry.md").unlink()
    with pytest.raises(ValueError, match="documents not found: .*ferry.md"):
        subquestion_recall.measure(path, ["rules"])
