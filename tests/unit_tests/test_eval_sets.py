"""The bundled evaluation sets (keel/evals/sets) measure what they claim: each split holds whole sets,
every set has enough answerable and look-alike unanswerable questions and conversations whose later
turns lean on earlier ones, golds are really in the named documents, and absent names really are
absent. The set over the shared public documents is checked when ../shared/data is there."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from keel.checks.followup_rewrite import NOT_A_FOLLOWUP, followup_kind
from keel.evals.qa import BUNDLED_SETS, SPLITS, QASetError, bundled_sets, load_qa_set
from keel.evals.scoring import normalize
from keel.loaders.registry import loader_for

SET_FILES = sorted(BUNDLED_SETS.glob("*/questions.json"))


def _needs_shared(path) -> bool:
    return any("shared/data" in d for d in json.loads(path.read_text(encoding="utf-8"))["documents"])


def loaded(path):
    if _needs_shared(path) and not (path.parent / json.loads(path.read_text())["documents"][0]).resolve().is_file():
        pytest.skip(f"{path.parent.name} reads ../shared/data/docs, which is not beside this checkout")
    return load_qa_set(path)


def document_text(path) -> str:
    """A document as Keel's loaders read it, normalised as golds are compared."""
    return normalize(" ".join(page.page_content for page in loader_for(path).lazy_load()))


def test_every_split_has_sets_and_a_set_has_one_split():
    splits = Counter(json.loads(p.read_text(encoding="utf-8")).get("split") for p in SET_FILES)
    assert set(splits) <= set(SPLITS) and all(splits[s] >= 1 for s in SPLITS), splits
    assert sum(len(bundled_sets(s)) for s in SPLITS) == len(SET_FILES) >= 5


@pytest.mark.parametrize("path", SET_FILES, ids=lambda p: p.parent.name)
def test_a_set_has_enough_questions_look_alikes_and_conversations(path):
    qa_set = loaded(path)
    kinds = Counter(q.answerable for q in qa_set.questions)
    assert kinds[True] >= 30 and kinds[False] >= 30, kinds
    unanswerable = Counter(q.category for q in qa_set.questions if not q.answerable)
    assert len(unanswerable) >= 3, unanswerable  # look-alikes of several kinds, not one
    assert len(qa_set.conversations) >= 8
    assert all(2 <= len(c.turns) <= 3 for c in qa_set.conversations)
    later = [t for c in qa_set.conversations for t in c.turns[1:]]
    assert any(t.question.answerable for t in later) and any(not t.question.answerable for t in later)


@pytest.mark.parametrize("path", SET_FILES, ids=lambda p: p.parent.name)
def test_every_gold_is_in_its_source_and_absent_names_are_absent(path):
    qa_set = loaded(path)
    texts = {p: document_text(p) for p in qa_set.documents}
    items = [*qa_set.questions, *(t.question for c in qa_set.conversations for t in c.turns)]
    for item in (q for q in items if q.answerable):
        text = texts[qa_set.document_named(item.source)]
        assert any(normalize(gold) in text for gold in item.answers), (item.qid, item.answers)
    corpus = " ".join(texts.values())
    for item in items:
        for term in item.absent_terms:
            assert not re.search(rf"\b{re.escape(normalize(term))}\b", corpus), (item.qid, term)


def test_most_later_turns_read_as_follow_ups():
    """The conversations test follow-ups, not fresh questions asked in a row."""
    later = [t.question.question for p in SET_FILES if not _needs_shared(p)
             for c in load_qa_set(p).conversations for t in c.turns[1:]]
    leaning = sum(followup_kind(q) != NOT_A_FOLLOWUP for q in later)
    assert leaning >= 0.7 * len(later), f"{leaning} of {len(later)}"


def test_a_bad_split_or_a_later_turn_without_its_standalone_question_is_refused(tmp_path):
    (tmp_path / "a.md").write_text("The clinic opens at 8 am.")
    turn = {"question": "When does the clinic open?", "answers": ["8 am"], "answerable": True, "source": "a.md"}
    base = {"documents": ["a.md"], "questions": [{"id": "q1", **turn, "category": "c"}]}
    bad_split = tmp_path / "split.json"
    bad_split.write_text(json.dumps({**base, "split": "train"}))
    with pytest.raises(QASetError, match="'split' must be one of tune, choose, report"):
        load_qa_set(bad_split)
    no_standalone = tmp_path / "turns.json"
    later = {"question": "And on Sundays?", "answers": [], "answerable": False}
    no_standalone.write_text(json.dumps({**base, "conversations": [{"id": "c1", "turns": [turn, later]}]}))
    with pytest.raises(QASetError, match=r"conversation 1 \(id 'c1'\), turn 2: a later turn needs the 'standalone'"):
        load_qa_set(no_standalone)


def test_the_gate_report_reads_a_qa_set_as_well_as_squad(tmp_path):
    from keel.evals.calibration import is_qa_set

    assert all(is_qa_set(path) for path in SET_FILES)
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"version": "v2.0", "data": []}))
    assert not is_qa_set(squad) and not is_qa_set(tmp_path / "missing.json")
