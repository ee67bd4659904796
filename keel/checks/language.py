"""Which language is the question in? A packaged detector (py3langid: its model ships in the wheel,
nothing is downloaded). Short or ambiguous text falls back to the deployment's default language,
because a 3-word question is too little evidence to switch the answer's language."""

from __future__ import annotations

from functools import lru_cache

from keel.core.settings.grounding import GroundingSettings


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect_language(text: str, default: str = "en", min_confidence: float = 0.5, min_chars: int = 12) -> str:
    """ISO 639-1 code of ``text``'s language, or ``default`` when the evidence is weak."""
    stripped = " ".join(text.split())
    if len(stripped) < min_chars:
        return default
    language, probability = _identifier().classify(stripped)
    return language if probability >= min_confidence else default


def clearly_other_language(answer: str, expected: str, cfg: GroundingSettings) -> str | None:
    """The answer's language when it is clearly not ``expected`` (long enough and a confident
    detection, cfg.language_mismatch_*), else None: names and short answers are never judged."""
    import re

    text = " ".join(re.sub(r"\[\s*Source\s+\d+\s*\]", " ", answer, flags=re.I).split())
    if len(text) < cfg.language_mismatch_min_chars:
        return None
    language, probability = _identifier().classify(text)
    if probability >= cfg.language_mismatch_min_confidence and language != expected:
        return language
    return None


def answer_language(question_language: str, cfg: GroundingSettings) -> str:
    """The language the answer is written in: the question's when the chat model writes it
    (cfg.answer_languages), else the default language (the documents' as the model reads them)."""
    return question_language if question_language in cfg.answer_languages else cfg.default_language


def framed_answer(answer: str, question_language: str, cfg: GroundingSettings) -> str:
    """An answer written in another language than the question's, under the asker's-language line
    that says so (cfg.answer_frames); unchanged when the model wrote the question's language."""
    written_in = answer_language(question_language, cfg)
    frame = cfg.answer_frames.get(question_language)
    if written_in == question_language or not frame:
        return answer
    name = cfg.answer_language_names.get(question_language, language_name(written_in))
    return f"{frame.replace('{language}', name)}\n\n{answer}"  # not format(): other braces stay as written


def localized_fallback(language: str, cfg: GroundingSettings) -> str:
    """The deployment's "I don't know" text in the question's language, else in the default one.

    ``cfg.fallback_answer`` is the default language's text, so a deployment that overrides it
    is honoured."""
    if language == cfg.default_language or language not in cfg.fallback_answers:
        return cfg.fallback_answer
    return cfg.fallback_answers[language]


LANGUAGE_NAMES = {
    "en": "English", "hi": "Hindi", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "ar": "Arabic", "zh": "Chinese", "ja": "Japanese", "ru": "Russian",
    "bn": "Bengali", "ta": "Tamil", "te": "Telugu", "mr": "Marathi", "ur": "Urdu", "tr": "Turkish",
}


def language_name(code: str) -> str:
    """The language's English name for the prompt ("de" -> "German"); an unknown code as given."""
    return LANGUAGE_NAMES.get(code, code)
