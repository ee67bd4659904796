"""Moderation in other languages: the route by language and the multilingual head's neighbour vote,
with made-up classifiers (the shipped heads on the real encoders are tested in integration_tests)."""

from __future__ import annotations

import numpy as np

from keel.checks.model_moderation import ClassifierModerator, LanguageRoutedModerator
from keel.checks.moderation import ModerationResult
from keel.core.configuration import Configuration
from keel.core.safety_taxonomy import HAZARD_CODES
from keel.core.settings.guardrails import SHIPPED_MULTILINGUAL_THRESHOLD
from keel.models.safety_classifier import (
    MULTILINGUAL_ARTEFACT_DIR,
    SafetyClassifier,
    load_safety_classifier,
    neighbour_vote,
)


class _Recorder:
    def __init__(self, safe: bool) -> None:
        self.safe, self.seen = safe, []

    def check(self, text: str) -> ModerationResult:
        self.seen.append(text)
        return ModerationResult(self.safe, None if self.safe else "S1")


def _routed():
    english, other = _Recorder(True), _Recorder(False)
    routed = LanguageRoutedModerator(english, other, lambda text: "de" if text.startswith("Wie") else "en")
    return routed, english, other


def test_only_text_in_another_language_goes_to_the_other_moderator():
    routed, english, other = _routed()
    assert routed.check("How much is the plan?").safe
    assert not routed.check("Wie viel kostet der Plan?").safe
    assert english.seen == ["How much is the plan?"] and other.seen == ["Wie viel kostet der Plan?"]


def test_an_answer_is_routed_by_its_own_language_not_the_question():
    routed, english, other = _routed()
    assert not routed.check_answer("How much is it?", "Wie man es baut: ...").safe
    assert other.seen == ["Wie man es baut: ..."] and english.seen == []


def test_the_vote_is_the_share_of_the_nearest_prompts_per_label():
    bank = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32)
    labels = np.array([1, 1, 0, 0])  # rows 0-1 harmful ("S1" at 1), rows 2-3 safe
    votes = neighbour_vote(np.array([[1, 0.05]], dtype=np.float32), bank, labels, 2, 2)
    assert votes.tolist() == [[0.0, 1.0]]
    votes = neighbour_vote(np.array([[1, 0.05]], dtype=np.float32), bank, labels, 3, 2)
    assert np.allclose(votes, [[1 / 3, 2 / 3]])


def _voting_classifier(weight: float) -> SafetyClassifier:
    # A head that always says 0.9 safe; neighbours that are all harmful near (1, 0).
    weights = np.zeros((2, 2), dtype=np.float32)
    bias = np.log(np.array([0.9, 0.1], dtype=np.float32))
    bank = np.array([[1, 0], [0.99, 0.14]], dtype=np.float32)
    return SafetyClassifier(("safe", "S1"), weights, bias, {"neighbour_count": 2, "neighbour_weight": weight},
                            bank, np.array([1, 1]))


def test_the_head_and_the_neighbours_are_averaged_by_the_vote_weight():
    vector = np.array([[1.0, 0.0]], dtype=np.float32)
    assert np.allclose(_voting_classifier(0.0).probabilities(vector), [[0.9, 0.1]])
    assert np.allclose(_voting_classifier(0.5).probabilities(vector), [[0.45, 0.55]])
    moderator = ClassifierModerator(("safe", "S1"), _voting_classifier(0.5).probabilities, lambda texts: [vector[0]],
                                    0.5, HAZARD_CODES)
    verdict = moderator.check("anything")
    assert not verdict.safe and verdict.category == "S1" and abs(verdict.score - 0.55) < 1e-6


def test_neighbours_survive_saving_and_loading(tmp_path):
    saved = _voting_classifier(0.5)
    saved.save(tmp_path)
    loaded = load_safety_classifier(tmp_path)
    assert loaded.neighbour_count == 2 and loaded.neighbour_weight == 0.5
    vector = np.array([[0.6, 0.8]], dtype=np.float32)
    assert np.allclose(loaded.probabilities(vector), saved.probabilities(vector), atol=1e-3)


def test_the_shipped_multilingual_head_carries_the_settings_threshold_and_a_vote():
    classifier = load_safety_classifier(MULTILINGUAL_ARTEFACT_DIR)
    assert classifier.metadata["threshold"] == SHIPPED_MULTILINGUAL_THRESHOLD
    assert Configuration().moderation_multilingual_threshold == SHIPPED_MULTILINGUAL_THRESHOLD
    assert classifier.neighbour_count > 0 and 0 < classifier.neighbour_weight < 1
    assert classifier.neighbours is not None and len(classifier.neighbours) == classifier.metadata["training_examples"]
    assert classifier.labels == load_safety_classifier().labels  # both heads name the same categories
    assert classifier.dimensions == 384
