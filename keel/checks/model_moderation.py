"""Model-based moderators: the offline safety classifier and Llama Guard, with the keyword list in
front of either.

Pure given their parts: the caller hands in the function that embeds texts (the same cached vectors
the answer checks use, so a question is embedded once per turn) and the classifier's probabilities,
or the function that asks Llama Guard. What refuses is the deployment's choice of hazard categories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from keel.checks.moderation import ModerationResult, Moderator, moderate_answer
from keel.core.safety_taxonomy import SAFE

Vectors = Callable[[Sequence[str]], Sequence[np.ndarray]]
Probabilities = Callable[[np.ndarray, Sequence[str]], np.ndarray]  # vectors and their texts -> label probabilities
UNAVAILABLE = "moderation_unavailable"


@dataclass
class ClassifierModerator:
    """Refuses when the probability of the refusing hazard categories reaches ``threshold``; the
    category named is the likeliest of those. A text that ``language`` places in another language
    than the one the classifier's embedding model reads (``trained_language``) is refused from
    ``other_language_threshold`` instead, calibrated on prompts of those languages: there the sentence
    vector says little and the head leans on the words, so the English threshold is no guide; a
    deployment can set it lower to refuse more cautiously in other languages."""

    labels: Sequence[str]
    probabilities: Probabilities
    vectors: Vectors
    threshold: float
    refuse_categories: Sequence[str]
    other_language_threshold: float | None = None
    language: Callable[[str], str] | None = None  # a text's language code (ISO 639-1)
    trained_language: str = "en"
    answer_threshold: float | None = None  # for answers: statements, not the requests it was trained on

    def threshold_for(self, text: str) -> float:
        if self.other_language_threshold is None or self.language is None:
            return self.threshold
        return self.threshold if self.language(text) == self.trained_language else self.other_language_threshold

    def check(self, text: str) -> ModerationResult:
        return self.judge(text, np.asarray(self.vectors([text])[0], dtype=np.float32))

    def check_answer(self, question: str, answer: str) -> ModerationResult:  # noqa: ARG002 - judged alone
        """An answer, judged alone at ``answer_threshold`` (the question was judged before it)."""
        vector = np.asarray(self.vectors([answer])[0], dtype=np.float32)
        return self.judge(answer, vector, self.answer_threshold)

    def judge(self, text: str, vector: np.ndarray, threshold: float | None = None) -> ModerationResult:
        row = self.probabilities(vector[None, :], [text])[0]
        refusing = [(float(row[i]), label) for i, label in enumerate(self.labels)
                    if label != SAFE and label in self.refuse_categories]
        score = sum(p for p, _ in refusing)
        if refusing and score >= (self.threshold_for(text) if threshold is None else threshold):
            return ModerationResult(False, max(refusing)[1], score)
        return ModerationResult(True, None, score)


@dataclass
class GuardModerator:
    """Llama Guard's verdict, through ``judge(user, agent)`` (keel.models.llama_guard's client): the
    question as the user's turn, an answer as the agent's reply to it. When the model cannot answer,
    ``fail_closed`` refuses (category ``moderation_unavailable``) instead of letting the text through."""

    judge: Callable[[str, str | None], object]  # returns an object with .safe and .categories
    refuse_categories: Sequence[str]
    fail_closed: bool = True
    errors: tuple[type[BaseException], ...] = (RuntimeError,)
    on_error: Callable[[BaseException], None] | None = None

    def check(self, text: str) -> ModerationResult:
        return self._verdict(text, None)

    def check_answer(self, question: str, answer: str) -> ModerationResult:
        return self._verdict(question, answer)

    def _verdict(self, user: str, agent: str | None) -> ModerationResult:
        try:
            verdict = self.judge(user, agent)
        except self.errors as error:
            if self.on_error:
                self.on_error(error)
            return ModerationResult(False, UNAVAILABLE) if self.fail_closed else ModerationResult(True)
        refused = [code for code in verdict.categories if code in self.refuse_categories]
        if verdict.safe or not refused:
            return ModerationResult(True)
        return ModerationResult(False, refused[0])


@dataclass
class LanguageRoutedModerator:
    """Text in ``english_language`` (as ``language`` places it) goes to ``english``, text in any other
    language to ``other``: a model trained on one language's vectors is blind elsewhere, and the
    encoder that reads every language costs more, so only the texts that need it pay for it. An
    answer is routed by its own language (it is judged alone)."""

    english: Moderator
    other: Moderator
    language: Callable[[str], str]  # a text's language code (ISO 639-1)
    english_language: str = "en"

    def judge_with(self, text: str) -> Moderator:
        return self.english if self.language(text) == self.english_language else self.other

    def check(self, text: str) -> ModerationResult:
        return self.judge_with(text).check(text)

    def check_answer(self, question: str, answer: str) -> ModerationResult:
        return moderate_answer(self.judge_with(answer), question, answer)


@dataclass
class LayeredModerator:
    """Each layer in order; the first refusal wins (the cheap keyword list goes first)."""

    layers: Sequence[Moderator]

    def check(self, text: str) -> ModerationResult:
        result = ModerationResult(True)
        for layer in self.layers:
            result = layer.check(text)
            if not result.safe:
                return result
        return result

    def check_answer(self, question: str, answer: str) -> ModerationResult:
        result = ModerationResult(True)
        for layer in self.layers:
            result = moderate_answer(layer, question, answer)
            if not result.safe:
                return result
        return result
