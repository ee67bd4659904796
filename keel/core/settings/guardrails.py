"""What is refused: questions over the token budget, and questions or answers the moderator judges
harmful (an offline classifier by default, Llama Guard 3 over an endpoint in production, blocked phrases
always)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.safety_taxonomy import HAZARD_CODES
from keel.core.settings.checks import AT_LEAST_ONE, POSITIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope

ModerationBackend = Literal["classifier", "llama_guard", "keywords"]
LlamaGuardApi = Literal["completions", "chat"]
# The refusal threshold the shipped classifier was calibrated with (keel/models/safety_classifier/head.json,
# written by keel/evals/safety_training.py); a test keeps the two equal.
SHIPPED_THRESHOLD = 0.82
# Its threshold for questions detected in another language than English, calibrated the same way.
SHIPPED_OTHER_LANGUAGE_THRESHOLD = 0.818
# The multilingual head's (keel/models/safety_classifier_multilingual/head.json), for every question the language
# detector places in another language than English, calibrated the same way on such prompts.
SHIPPED_MULTILINGUAL_THRESHOLD = 0.678
# The English head's threshold for answers (statements, not the requests it was trained on): the lowest from the question
# threshold up that refuses at most 1% of the bundled tune and choose sets' answer sentences (python -m keel.evals.answer_moderation; re-run
# whenever the head is retrained or the embedding model's runtime changes).
ANSWER_THRESHOLD = 0.82


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class GuardrailSettings(CheckedSettings):
    """The input budget and moderation: which backend judges questions and answers, which hazard
    categories it refuses, and how it behaves when the moderation model is unavailable."""

    max_input_tokens: int = field(
        default=1024,
        metadata={"doc": "A question longer than this many tokens is refused (exceeded_token_budget).", **AT_LEAST_ONE},
    )
    blocked_terms: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "Extra phrases the keyword moderator refuses, on top of its built-in list.", "min_chars": 1},
    )
    moderation_backend: ModerationBackend = field(
        default="classifier",
        metadata={"doc": "What judges a question and an answer: classifier = the offline safety classifier shipped "
                  "with Keel (a head on the embedding model's vectors); llama_guard = Llama Guard 3 at "
                  "llama_guard_url; keywords = only the built-in patterns and blocked_terms. blocked_terms apply "
                  "with every backend."},
    )
    moderation_threshold: float = field(
        default=SHIPPED_THRESHOLD,
        metadata={"doc": "The offline classifier refuses when the probability of the refusing categories reaches "
                  "this; higher refuses less. The default is the training script's cross-validated choice.",
                  **SHARE},
    )
    moderation_answer_threshold: float = field(
        default=ANSWER_THRESHOLD,
        metadata={"doc": "The offline classifier's threshold for an answer (moderate_answers). It was trained on "
                  "requests, and the statements of internal documents (passwords, locks, theft cover) can read to it "
                  "like requests. Chosen by python -m keel.evals.answer_moderation: the lowest, from the question "
                  "threshold up, that refuses at most 1% of the bundled sets' harmless answer sentences (since "
                  "answers in other languages go to the multilingual head, that is the question threshold itself); "
                  "lower catches more harmful text and refuses more harmless answers.", **SHARE},
    )
    moderation_other_language_threshold: float = field(
        default=SHIPPED_OTHER_LANGUAGE_THRESHOLD,
        metadata={"doc": "With moderation_multilingual off: the English head's threshold for a question the language "
                  "detector confidently places in another language than English (its embedding model's), where it "
                  "is less sure: lower refuses "
                  "more harmful and more harmless questions there (head.json's cv_other_languages_by_threshold "
                  "gives the cross-validated trade). The default is the training script's choice, calibrated like "
                  "moderation_threshold on German, French and Spanish borderline-safe prompts.", **SHARE},
    )
    moderation_multilingual: bool = field(
        default=True,
        metadata={"doc": "Judge a question (or answer) the language detector places in another language than English "
                  "with the multilingual head: the same training prompts over multilingual-e5-small's vectors, "
                  "averaged with a vote of the nearest training prompts. The English head's embedding model reads "
                  "English only; there it refused about half of the German, French and Spanish harmful probe "
                  "requests. Costs one more embedding (about 20 ms on two CPUs) for such a text only; false "
                  "judges them with the English head at moderation_other_language_threshold."},
    )
    moderation_multilingual_threshold: float = field(
        default=SHIPPED_MULTILINGUAL_THRESHOLD,
        metadata={"doc": "The multilingual head refuses a question in another language when the probability of the "
                  "refusing categories reaches this; lower refuses more there (head.json's "
                  "cv_other_languages_by_threshold gives the cross-validated trade). The default is the training "
                  "script's choice, calibrated on German, French and Spanish borderline-safe prompts.", **SHARE},
    )
    moderation_refuse_categories: tuple[str, ...] = field(
        default=HAZARD_CODES,
        metadata={"doc": "Hazard categories (S1-S14 of the MLCommons taxonomy Llama Guard 3 uses) that are refused; "
                  "a category left out is answered.", "choices": HAZARD_CODES},
    )
    moderate_answers: bool = field(
        default=True,
        metadata={"doc": "Also judge the final answer before it is shown; an unsafe one is replaced by the refusal "
                  "(status not_safe)."},
    )
    llama_guard_url: str | None = field(
        default=None,
        metadata={"doc": "OpenAI-compatible server (vLLM, TGI) serving Llama Guard 3, for moderation_backend="
                  "llama_guard, e.g. http://guard:8000/v1.", "url_schemes": ("http", "https")},
    )
    llama_guard_model: str = field(
        default="meta-llama/Llama-Guard-3-8B",
        metadata={"doc": "The model name that server knows Llama Guard by.", "min_chars": 1},
    )
    llama_guard_api: LlamaGuardApi = field(
        default="completions",
        metadata={"doc": "completions: Keel sends Llama Guard 3's full prompt to /completions; chat: Keel sends the "
                  "conversation to /chat/completions and the server applies the model's template."},
    )
    llama_guard_timeout_s: float = field(
        default=10.0, metadata={"doc": "Seconds to wait for Llama Guard's verdict.", **POSITIVE},
    )
    moderation_fail_closed: bool = field(
        default=True,
        metadata={"doc": "When the moderation model cannot answer (down, timeout, unreadable verdict), refuse the "
                  "turn (true) or let it through unjudged (false)."},
    )
