"""The evidence checks before generation (keel/checks/answerability.py) on the real parts: MiniLM ranks the
evidence, and the SQuAD 2.0 dev set in ../shared/data shows the checks stop unanswerable questions far more
often than answerable ones; the gate report loads the embeddings before it reads its file, so refusing a file
that is not SQuAD is tried here too. The same checks with fakes are in unit_tests/test_answerability.py."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from keel.checks.answerability import TERMS_NOT_IN_EVIDENCE, evidence_gaps
from keel.core.configuration import Configuration
from tests.varden_guide import ONE_DOCUMENT, PASSAGES, SOURCES


@pytest.mark.real
def test_real_embeddings_pick_evidence_and_find_the_gap(keel_config):
    from keel.checks.semantic import Semantic
    from keel.models.embeddings import get_embeddings

    similarities = Semantic(get_embeddings(keel_config).embed_documents)
    cfg = Configuration()
    assert evidence_gaps("How far away can the lamp of the lighthouse be seen?", PASSAGES, SOURCES, cfg,
                         similarities) == []
    assert evidence_gaps("How far away can Jon Berg see the lamp of the lighthouse?", PASSAGES, ONE_DOCUMENT,
                         Configuration(evidence_sentences=1), similarities) == [f"{TERMS_NOT_IN_EVIDENCE}:berg,jon"]
    assert evidence_gaps("Why can fishing boats not moor at the ferry pier?", PASSAGES, SOURCES, cfg,
                         similarities) == []


SQUAD = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "qa" / "squad2-dev-normans-complexity.json"


@pytest.mark.real
@pytest.mark.skipif(not SQUAD.exists(), reason=f"{SQUAD} is not there (../shared/data holds the dev set)")
def test_on_the_dev_set_the_evidence_checks_stop_unanswerable_far_more_than_answerable(keel_config):
    from keel.evals.answerability import gate_outcomes, summarize

    cfg = Configuration(keel_home=keel_config.keel_home, user_id=f"ans-{uuid.uuid4().hex[:6]}")
    summary = summarize(gate_outcomes(SQUAD, cfg, limit=160, seed=7, progress=False))
    stopped = summary["stopped"]["evidence"]
    assert summary["counts"]["unanswerable"] > 40 and summary["counts"]["answerable_with_evidence"] > 20
    assert stopped["unanswerable"] >= 0.25, summary
    assert stopped["answerable_with_evidence"] <= stopped["unanswerable"] / 3, summary


def test_the_gate_report_refuses_a_file_that_is_not_squad(tmp_path, capsys):
    from keel.evals.answerability import main

    bad = tmp_path / "notes.json"
    bad.write_text('{"rows": []}', encoding="utf-8")
    assert main([str(bad)]) == 2
    assert "not a SQuAD 2.0 file" in capsys.readouterr().err


@pytest.mark.real
@pytest.mark.skipif(not SQUAD.exists(), reason=f"{SQUAD} is not there (../shared/data holds the dev set)")
def test_on_the_dev_set_a_quote_saying_little_of_the_question_needs_to_read_close_to_it(keel_config):
    """The extractive quote on real retrieval and MiniLM, every dev question: holding a quote that says
    little of the question to min_uncovered_quote_similarity stops several wrong quotes (unanswerable
    questions answered, answers without the gold) for each right one, and keeps nine in ten right ones.
    Samples of a hundred questions swing from 2 to 9 wrong quotes a right one, so the whole set is read."""
    from keel.evals.extractive_quotes import quote_outcomes, summarize

    cfg = Configuration(keel_home=keel_config.keel_home, user_id=f"quote-{uuid.uuid4().hex[:6]}")
    variants = {"floor": dataclasses.replace(cfg, min_uncovered_quote_similarity=cfg.min_quote_similarity),
                "set": cfg}
    counts = summarize(quote_outcomes(SQUAD, variants, progress=False), list(variants), set())
    floor, held = counts["outside_sample"]["floor"], counts["outside_sample"]["set"]
    wrong = lambda kinds: kinds["unanswerable_quoted"] + kinds["without_gold"]  # noqa: E731
    stopped_wrong, lost_right = wrong(floor) - wrong(held), floor["right"] - held["right"]
    assert stopped_wrong >= 20, counts
    assert lost_right * 3 <= stopped_wrong, counts
    assert lost_right <= floor["right"] / 10, counts


def test_the_quote_report_names_a_bad_setting(capsys):
    """The variants are read before the file, so this runs without ../shared/data too."""
    from keel.evals.extractive_quotes import main

    assert main([str(SQUAD), "--variant", "min_uncovered_quote_similarity=2"]) == 2
    assert "min_uncovered_quote_similarity must be at most 1.0" in capsys.readouterr().err
    assert main([str(SQUAD), "--variant", "no_such_setting=1"]) == 2
    assert "--variant 'no_such_setting=1'" in capsys.readouterr().err


def test_the_quote_report_refuses_a_file_that_is_not_squad(tmp_path, capsys):
    from keel.evals.extractive_quotes import main

    bad = tmp_path / "notes.json"
    bad.write_text('{"rows": []}', encoding="utf-8")
    assert main([str(bad)]) == 2
    assert "not a SQuAD 2.0 file" in capsys.readouterr().err
