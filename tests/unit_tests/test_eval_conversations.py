"""`keel eval conversations` and `keel eval rewrites` with fakes: each conversation is asked in one
conversation id, turn by turn; later turns are scored apart; the rewrite score chains its own
rewrites as a conversation does. The real graph on a real set is in integration_tests."""

from __future__ import annotations

import json
from types import SimpleNamespace

from keel.core.configuration import Configuration
from keel.evals import conversations, qa

CLINIC = "The Alder clinic is open from 9 am to 1 pm on Saturdays."


def clinic_set(tmp_path):
    (tmp_path / "clinic.md").write_text(CLINIC)
    first = {"question": "When is the Alder clinic open on Saturdays?", "answers": ["9 am to 1 pm"],
             "answerable": True, "source": "clinic.md"}
    data = {"documents": ["clinic.md"], "split": "tune",
            "questions": [{"id": "q1", "category": "c", **first}],
            "conversations": [
                {"id": "c1", "turns": [first, {"question": "And on Sundays?", "answers": [], "answerable": False,
                                               "standalone": "When is the Alder clinic open on Sundays?"}]},
                {"id": "c2", "turns": [first, {"question": "And on Saturdays?", "answers": ["9 am to 1 pm"],
                                               "answerable": True, "source": "clinic.md",
                                               "standalone": "When is the Alder clinic open on Saturdays?"}]}]}
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(data))
    return qa.load_qa_set(path)


class ScriptedGraph:
    """Answers each question from a table, and records the conversation id it was asked in."""

    def __init__(self, answers: dict):
        self.answers, self.asked = answers, []

    def invoke(self, state, config):
        question = state["messages"][0][1]
        self.asked.append((config["configurable"]["thread_id"], question))
        return self.answers[question]


def test_each_conversation_is_one_thread_and_later_turns_are_scored_apart(tmp_path):
    qa_set = clinic_set(tmp_path)
    right = {"answer": "It is open from 9 am to 1 pm [Source 1].", "status": "success", "attempts": 1}
    graph = ScriptedGraph({
        "When is the Alder clinic open on Saturdays?": right,
        "And on Sundays?": {"answer": "It is open from 9 am to 1 pm on Sundays [Source 1].", "status": "success"},
        "And on Saturdays?": {"answer": "I don't know.", "status": "insufficient_context"},
    })
    result = conversations.run(qa_set, Configuration(), graph, ingest=lambda paths: SimpleNamespace(errors=[]),
                               run_config=lambda cfg, thread: {"configurable": {"thread_id": thread}})
    threads = [thread for thread, _ in graph.asked]
    assert threads[0] == threads[1] and threads[2] == threads[3] and threads[0] != threads[2]
    later = result["later_turns"]
    assert later["questions"] == 2 and later["confidently_wrong_rate"] == 0.5  # Sundays answered with Saturday's hours
    assert later["answerable_correct"] == 0.0 and result["answerable_correct"] == round(2 / 3, 4)
    assert result["conversations"] == 2


def test_rewrite_scores_chain_the_rewrites_a_conversation_would(tmp_path):
    qa_set = clinic_set(tmp_path)
    seen = []

    def rewrite(question, history, previous):
        seen.append(previous)
        return "When is the Alder clinic open on Sundays?" if "Sundays" in question else question

    scores = conversations.rewrite_scores(qa_set.conversations, rewrite)
    assert scores["turns"] == 2 and scores["exact"] == 0.5 and scores["same_meaning_words"] == 0.5
    assert seen == ["When is the Alder clinic open on Saturdays?"] * 2  # the first turn as asked
