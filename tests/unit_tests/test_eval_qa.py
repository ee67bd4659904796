"""`keel eval qa` / `helpdesk`: the question-file format, the shared scoring (confidently wrong answers
above all), the user's ingest/ask path with fakes; once through the real graph is in
integration_tests/test_eval_qa.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from keel.evals import qa
from keel.evals.scoring import Outcome, by_category, contains_gold, is_confidently_wrong, metrics, outcome_class
from tests.eval_files import write_qa_set


def outcome(qid, impossible, status, correct=False, category="c", answer="x") -> Outcome:
    return Outcome(qid, "q", impossible, [] if impossible else ["gold"], answer, status, 1, 1.0,
                   correct=correct, grounded=True, category=category)


# --- scoring -------------------------------------------------------------------------------------

def test_confidently_wrong_counts_every_wrong_success_over_all_questions():
    outcomes = [
        outcome("right", False, "success", correct=True),
        outcome("answer without gold", False, "success", correct=False),
        outcome("unanswerable answered", True, "success"),
        outcome("abstained", True, "insufficient_context"),
        outcome("missed", False, "low_confidence"),
    ]
    assert [is_confidently_wrong(o) for o in outcomes] == [False, True, True, False, False]
    assert [outcome_class(o) for o in outcomes] == ["correct", "confidently_wrong", "confidently_wrong",
                                                    "abstained", "missed"]
    m = metrics(outcomes)
    assert m["confidently_wrong_rate"] == 0.4  # 2 of all 5, not of the successes or of one group
    assert m["answerable_correct"] == round(1 / 3, 4) and m["abstention_rate"] == 0.5
    assert m["status_counts"] == {"insufficient_context": 1, "low_confidence": 1, "success": 3}


def test_by_category_splits_answerable_and_unanswerable_groups():
    breakdown = by_category([
        outcome("a", False, "success", correct=True, category="lookalike"),
        outcome("b", True, "success", category="lookalike"),
        outcome("c", True, "not_safe", category="lookalike"),
        outcome("d", False, "success", correct=True, category=""),
    ])
    assert set(breakdown) == {"answerable/lookalike", "unanswerable/lookalike", "answerable"}
    assert breakdown["unanswerable/lookalike"] == {"questions": 2, "correct": 0, "abstained": 1, "missed": 0,
                                                  "confidently_wrong": 1, "confidently_wrong_rate": 0.5}


def test_gold_matching_is_squad_normalised():
    assert contains_gold("It weighs 3.4 kg [Source 1].", ["3.4 kg"])
    assert contains_gold("Returns are accepted for 30 days.", ["30-day", "30 days"])
    assert not contains_gold("Returns are accepted for 60 days.", ["30 days"])
    assert not contains_gold("anything", ["", "  "])  # an empty gold never matches everything


# --- the file format -----------------------------------------------------------------------------

def test_loads_a_valid_set_with_paths_relative_to_the_file(tmp_path):
    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    assert [d.name for d in qa_set.documents] == ["lighthouse.md", "school.txt"]
    assert all(d.is_absolute() and d.is_file() for d in qa_set.documents)
    assert [q.answerable for q in qa_set.questions] == [True, False, True, False]
    assert qa_set.questions[3].absent_terms == ("Varden college",)
    assert qa_set.name == "questions"


def test_a_set_in_another_language_keeps_its_documents_and_golds_and_drops_untranslated_questions(tmp_path):
    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    first, second = qa_set.questions[0], qa_set.questions[1]
    (qa_set.path.parent / qa.TRANSLATIONS_FILE).write_text(json.dumps({"questions": {
        first.qid: {"de": "Wer hütete den Leuchtturm?"}, second.qid: {"fr": "Qui ?"}}}), encoding="utf-8")
    german = qa.in_language(qa_set, "de")
    assert [q.question for q in german.questions] == ["Wer hütete den Leuchtturm?"]
    assert german.questions[0].answers == first.answers and german.documents == qa_set.documents
    assert qa.in_language(qa_set, "en") is qa_set
    with pytest.raises(qa.QASetError, match="no question translated to 'es'"):
        qa.in_language(qa_set, "es")


def test_a_language_without_a_translations_file_is_refused_by_name(tmp_path):
    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    with pytest.raises(qa.QASetError, match="translations.json"):
        qa.in_language(qa_set, "de")


def test_the_help_desk_questions_are_translated_to_german_french_and_spanish():
    helpdesk = qa.load_qa_set(qa.BUNDLED_HELPDESK)
    answerable = {q.qid for q in helpdesk.questions if q.answerable}
    for language in ("de", "fr", "es"):
        translated = qa.in_language(helpdesk, language)
        assert {q.qid for q in translated.questions} == answerable
        english = {q.qid: q.question for q in helpdesk.questions}
        assert all(q.question != english[q.qid] for q in translated.questions)


GOOD = {"id": "g", "question": "Who?", "answers": ["Mara Holt"], "answerable": True, "category": "person",
        "source": "docs/lighthouse.md"}


@pytest.mark.parametrize(("question", "problem"), [
    ({**GOOD, "answers": []}, "question 1 (id 'g'): an answerable question needs at least one gold answer"),
    ({**GOOD, "answerable": False}, "question 1 (id 'g'): an unanswerable question must have no 'answers'"),
    ({**GOOD, "source": "docs/other.md"}, "'source' must name one of the set's documents, got 'docs/other.md'"),
    ({**GOOD, "answerable": "yes"}, "'answerable' must be true or false"),
    ({**GOOD, "question": "  "}, "'question' must be a non-empty str"),
    ({**GOOD, "answers": "Mara Holt"}, "'answers' must be a list of non-empty strings"),
    ({k: v for k, v in GOOD.items() if k != "category"}, "'category' must be a non-empty str"),
    ({**GOOD, "absent_terms": [3]}, "'absent_terms' must be a list of non-empty strings"),
])
def test_a_malformed_question_is_named_with_its_problem(tmp_path, question, problem):
    path = write_qa_set(tmp_path, questions=[question])
    with pytest.raises(qa.QASetError) as error:
        qa.load_qa_set(path)
    assert str(path) in str(error.value) and problem in str(error.value)


def test_malformed_files_name_the_problem(tmp_path):
    path = write_qa_set(tmp_path, questions=[GOOD, {**GOOD, "question": "Again?"}])
    with pytest.raises(qa.QASetError, match="duplicate question id"):
        qa.load_qa_set(path)
    path = write_qa_set(tmp_path, documents=["docs/lighthouse.md", "docs/missing.pdf"])
    with pytest.raises(qa.QASetError, match="not found next to the question file: docs/missing.pdf"):
        qa.load_qa_set(path)
    path.write_text('{"data": []}')
    with pytest.raises(qa.QASetError, match="'documents' must be a non-empty list"):
        qa.load_qa_set(path)
    path.write_text("not json")
    with pytest.raises(qa.QASetError, match="not a readable JSON question file"):
        qa.load_qa_set(path)


def test_keel_eval_qa_refuses_a_bad_file_with_exit_2_and_no_traceback(tmp_path, capsys):
    from keel.cli.main import main

    path = write_qa_set(tmp_path, questions=[{**GOOD, "answers": []}])
    assert main(["eval", "qa", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert "an answerable question needs at least one gold answer" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


# --- the user's path, with a fake graph ------------------------------------------------------------

class FakeGraph:
    """Canned answers by question; records the run configuration of every call."""

    def __init__(self, answers: dict[str, tuple[str, str]]):
        self.answers, self.configs = answers, []

    def invoke(self, state, config):
        self.configs.append(config)
        answer, status = self.answers[state["messages"][0][1]]
        return {"answer": answer, "status": status, "attempts": 2, "reasons": []}


FAKE_ANSWERS = {
    "Who built the Varden lighthouse?": ("It was built by Mara Holt in 1874.", "success"),
    "Who painted the Varden lighthouse in 1990?": ("I don't know based on the provided documents.",
                                                   "insufficient_context"),
    "How many pupils does the island school have?": ("The school has two teachers.", "success"),
    "How many pupils does the Varden college have?": ("The island school has 48 pupils.", "success"),
}


def test_run_ingests_every_document_and_asks_each_question_in_a_new_conversation(tmp_path):
    from keel.cli.running import run_config
    from keel.core.configuration import Configuration

    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    ingested = []
    graph = FakeGraph(FAKE_ANSWERS)
    cfg = Configuration(user_id="eval-test", grounding_mode="strict")
    seen = []
    result = qa.run(qa_set, cfg, graph, ingest=lambda paths: ingested.append(paths) or SimpleNamespace(errors=[]),
                    run_config=run_config, on_outcome=seen.append)

    assert ingested == [qa_set.documents]
    assert [c["configurable"]["user_id"] for c in graph.configs] == ["eval-test"] * 4
    assert {c["configurable"]["grounding_mode"] for c in graph.configs} == {"strict"}
    assert len({c["configurable"]["thread_id"] for c in graph.configs}) == 4
    assert result["answerable_correct"] == 0.5  # "two teachers" lacks the gold 48
    assert result["abstention_rate"] == 0.5
    assert result["confidently_wrong_rate"] == 0.5  # the wrong count and the look-alike answered
    assert result["by_category"]["unanswerable/lookalike"]["confidently_wrong"] == 1
    assert result["mean_attempts"] == 2.0 and len(seen) == 4
    assert all(o["grounded"] for o in result["outcomes"] if o["status"] == "success")


def test_a_sample_still_ingests_every_document_and_a_failed_ingest_stops_the_run(tmp_path):
    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    ingested = []
    result = qa.run(qa_set, _config(), FakeGraph(FAKE_ANSWERS), limit=1, seed=3,
                    ingest=lambda paths: ingested.append(paths) or SimpleNamespace(errors=[]),
                    run_config=lambda cfg, conversation: {"configurable": {"thread_id": conversation}})
    assert result["questions"] == 1 and ingested == [qa_set.documents]
    failing = SimpleNamespace(errors=[{"source": "school.txt", "error": "no extractable text"}])
    with pytest.raises(qa.QASetError, match="could not be ingested: school.txt: no extractable text"):
        qa.run(qa_set, _config(), FakeGraph(FAKE_ANSWERS), ingest=lambda paths: failing,
               run_config=lambda cfg, conversation: {})


def _config():
    from keel.core.configuration import Configuration

    return Configuration(user_id="eval-test", grounding_mode="strict")


def test_keel_eval_qa_cli_wires_keel_ask_parts_and_writes_a_report(tmp_path, monkeypatch, capsys):
    import keel.cli.main as keel
    import keel.cli.running as running

    graph = FakeGraph(FAKE_ANSWERS)
    users = []
    monkeypatch.setattr(running, "graph_with_history", lambda cfg: graph)
    monkeypatch.setattr(running, "ingest_paths", lambda paths, cfg, conversation, progress=True:
                        users.append(cfg.user_id) or SimpleNamespace(errors=[]))
    path = write_qa_set(tmp_path)
    assert keel.main(["eval", "qa", str(path), "--json", "--limit", "3", "--report", str(tmp_path / "r")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["questions"] == 3 and "confidently_wrong_rate" in summary and "by_category" in summary
    assert users[0].startswith("eval-") and {c["configurable"]["user_id"] for c in graph.configs} == {users[0]}
    assert (tmp_path / "r" / "qa.png").stat().st_size > 1000
    assert len((tmp_path / "r" / "qa-outcomes.jsonl").read_text().splitlines()) == 3


def test_eval_set_overrides_are_typed_and_refuse_what_an_eval_cannot_change():
    from keel.evals.settings import settings_overrides

    assert settings_overrides(["require_answer_type=false", "exact_term_boost=0", "grounding_mode=open"]) == {
        "require_answer_type": False, "exact_term_boost": 0.0, "grounding_mode": "open"}
    # an optional text setting: the pool's escalation model, checked against the pool
    assert settings_overrides(["escalation_model=qwen2.5-coder-1.5b"]) == {"escalation_model": "qwen2.5-coder-1.5b"}
    with pytest.raises(ValueError, match="escalation_model must be one of"):
        settings_overrides(["escalation_model=../m.gguf"])
    for bad, named in [("nope=1", "Configuration field"), ("require_answer_type=maybe", "true or false"),
                       ("user_id=alice", "fresh user"), ("doc_ids=a,b", "only true/false"), ("max_attempts", "FIELD=VALUE")]:
        with pytest.raises(ValueError, match=named):
            settings_overrides([bad])


class LoggingGraph(FakeGraph):
    """Logs two attempts per question as validate_answer does: a wrong one the checks stopped,
    then the canned answer, which one check (too_short) also deducted from."""

    def invoke(self, state, config):
        import logging

        log = logging.getLogger("keel.answer")
        answer, status = self.answers[state["messages"][0][1]]
        for record in ({"answer_preview": "It was built in 1990 by the island council.", "abstained": False,
                        "deductions": {"wrong_entity:1990": 0.5, "ungrounded": 0.4}, "strategy": "grounded"},
                       {"answer_preview": answer, "abstained": answer.startswith("I don't know"),
                        "deductions": {"too_short": 0.1}, "strategy": "strict"}):
            log.info("answer_attempt", extra={"keel_telemetry": record})
        return super().invoke(state, config)


def test_each_check_is_counted_on_the_right_answers_it_held_back_and_the_wrong_ones_it_stopped(tmp_path):
    qa_set = qa.load_qa_set(write_qa_set(tmp_path))
    result = qa.run(qa_set, _config(), LoggingGraph(FAKE_ANSWERS), ingest=lambda paths: SimpleNamespace(errors=[]),
                    run_config=lambda cfg, conversation: {"configurable": {"thread_id": conversation}})
    # every question's first attempt is wrong (no gold, or unanswerable): stopped by both checks
    assert result["checks"]["wrong_entity"] == {"held_back_right": 0, "stopped_wrong": 4}
    assert result["checks"]["ungrounded"] == {"held_back_right": 0, "stopped_wrong": 4}
    # the second: Mara Holt is right; "two teachers" and the look-alike's 48 wrong; "I don't know" not an answer
    assert result["checks"]["too_short"] == {"held_back_right": 1, "stopped_wrong": 2}
    holt = next(o for o in result["outcomes"] if o["question"] == "Who built the Varden lighthouse?")
    assert [a["right"] for a in holt["attempt_checks"]] == [False, True]


def test_collecting_attempts_shows_the_console_no_more_than_before(caplog):
    import logging

    from keel.evals.check_attribution import attempts_logged

    log = logging.getLogger("keel.answer")
    with caplog.at_level(logging.WARNING):
        with attempts_logged() as attempts:
            log.info("answer_attempt", extra={"keel_telemetry": {"attempt": 1}})
            log.warning("the model endpoint is slow")
    assert attempts == [{"attempt": 1}]
    assert [r.getMessage() for r in caplog.records] == ["the model endpoint is slow"]
    assert log.propagate and not log.isEnabledFor(logging.INFO)
