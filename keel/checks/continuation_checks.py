"""Is a continuation still answering the question? Off-topic, off-domain, hallucination and plan checks.

Relevance with the embedding model (thresholds: < 0.2 to both the question and the answer so
far with 150+ chars is off-topic; < 0.25 to the user's documents is off-domain), pattern checks
(links, meta-commentary, a new dialogue turn) and an unexpected language switch. The same checks
run on the partial text while it streams (every 30 chunks) and on the finished piece, which is also
checked for repetition and against the answer's structural plan.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from keel.checks.dedup import full_text_repetition
from keel.checks.semantic import Semantic, words
from keel.checks.structure import AnswerStructure, structure_coherence
from keel.core.settings.continuation import ContinuationSettings
from keel.core.text import content_words

HALLUCINATION_PATTERNS = {
    "link": re.compile(r"https?://|\bwww\.|\b\w+\.(?:com|org|net|io)\b", re.I),
    "wikipedia": re.compile(r"\bwikipedia\b", re.I),
    "meta_content": re.compile(
        r"\b(as an ai|as a language model|i am an ai|i'm an ai|in this (?:answer|response)|i hope this helps|"
        r"let me know if|feel free to|here is the continuation|continuing (?:the|my) answer|the question asks|"
        r"the prompt|your answer was cut off|do not repeat)\b",
        re.I,
    ),
    "new_turn": re.compile(r"(?:^|\n)\s*(?:question|user|human|assistant|context)\s*:", re.I),
}
# The most frequent words of languages written in Latin script: enough to notice a switch.
STOPWORDS = {
    "en": set("the and of to is in that it was for with as are on by this be".split()),
    "fr": set("le la les et des est une du que dans pour pas sur qui au".split()),
    "de": set("der die das und ist ein eine nicht mit den von zu auf im sich".split()),
    "es": set("el la los las y es que en del por con una para se no".split()),
    "it": set("il lo gli e che di per una non sono della con del nel".split()),
    "pt": set("o os e que do da em um uma para com não dos das".split()),
    "nl": set("de het een en van is dat niet op te zijn met voor".split()),
}


@dataclass
class ContinuationVerdict:
    """Whether a continuation may be kept, and the reason code when it may not."""
    ok: bool
    reason: str = ""
    detail: str = ""


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ")[0] if name else ""


def dominant_script(text: str) -> tuple[str, int]:
    """The script most of the text's letters are in, and how many letters: a continuation that
    switches script has wandered off."""
    scripts = Counter(_script(c) for c in text if c.isalpha())
    if not scripts:
        return "", 0
    script, _ = scripts.most_common(1)[0]
    return script, sum(scripts.values())


def latin_language(
    text: str, min_stopwords: int = ContinuationSettings.language_min_stopwords,
    dominance: float = ContinuationSettings.language_dominance_ratio,
) -> str | None:
    """The Latin-script language whose stopwords clearly dominate the text, or None if unsure."""
    tokens = words(text)
    counts = {lang: sum(1 for t in tokens if t in stop) for lang, stop in STOPWORDS.items()}
    best = max(counts, key=counts.get)
    ranked = sorted(counts.values(), reverse=True)
    return best if ranked[0] >= min_stopwords and ranked[0] >= dominance * ranked[1] else None


def language_switch(
    piece: str, reference: str, min_letters: int, min_stopwords: int = ContinuationSettings.language_min_stopwords,
    dominance: float = ContinuationSettings.language_dominance_ratio,
) -> str | None:
    """'script:LATIN->CYRILLIC' or 'language:en->de' when the piece left the reference's language."""
    script, letters = dominant_script(piece)
    ref_script, ref_letters = dominant_script(reference)
    if letters < min_letters or ref_letters < min_letters:
        return None
    if script != ref_script:
        return f"script:{ref_script}->{script}"
    if script == "LATIN":
        lang = latin_language(piece, min_stopwords, dominance)
        ref_lang = latin_language(reference, min_stopwords, dominance)
        if lang and ref_lang and lang != ref_lang:
            return f"language:{ref_lang}->{lang}"
    return None


def hallucination_pattern(piece: str, known_text: str) -> str | None:
    """A link, Wikipedia, meta-commentary or a new turn that neither the context nor the question has."""
    known = known_text.lower()
    for name, pattern in HALLUCINATION_PATTERNS.items():
        for match in pattern.finditer(piece):
            if match.group(0).strip().lower() not in known:
                return f"{name}:{match.group(0).strip()[:40]}"
    return None


def context_windows(passages: Sequence[str], size: int = ContinuationSettings.context_window_words) -> list[str]:
    """Passages cut into windows of ``size`` words: the embedding model reads ~256 tokens at most."""
    windows = []
    for text in passages:
        tokens = text.split()
        windows += [" ".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]
    return windows


def keyword_relevance(piece: str, reference: str) -> float:
    """Without embeddings: the share of the piece's content words the reference also has."""
    words = content_words(piece)
    return len(words & content_words(reference)) / len(words) if words else 1.0


def relevance_problem(
    piece: str, question: str, answer: str, contexts: Sequence[str], semantic: Semantic | None,
    cfg: ContinuationSettings,
) -> str | None:
    """Off-topic to both question and answer tail, or off the documents' domain.
    Embedding similarity first; keyword overlap when no embeddings are at hand."""
    if len(piece) < cfg.stream_check_min_chars:
        return None
    tail = answer[-cfg.continuation_tail_chars:] if answer else ""
    if semantic is None:
        if keyword_relevance(piece, f"{question} {tail}") < cfg.off_topic_similarity:
            return "off_topic:keywords"
        if contexts and keyword_relevance(piece, " ".join(contexts)) < cfg.domain_off_topic_similarity:
            return "off_domain:keywords"
        return None
    similarities = semantic.similarities(piece, [question, tail] if tail else [question])
    best = max(similarities)
    if best < cfg.off_topic_similarity:  # low to the question AND to the answer so far
        return f"off_topic:{best:.2f}"
    if contexts:
        to_domain = max(semantic.similarities(piece, list(contexts)), default=1.0)
        if to_domain < cfg.domain_off_topic_similarity:
            return f"off_domain:{to_domain:.2f}"
    return None


def stream_monitor(
    question: str, answer: str, contexts: Sequence[str], known_text: str, semantic: Semantic | None,
    cfg: ContinuationSettings,
) -> Callable[[str], str | None]:
    """The check run on a continuation while it streams: a reason to stop it, or None."""

    def check(partial: str) -> str | None:
        found = hallucination_pattern(partial, known_text) or language_switch(
            partial, answer or question, cfg.language_switch_min_letters, cfg.language_min_stopwords,
            cfg.language_dominance_ratio,
        )
        return found or relevance_problem(partial, question, answer, contexts, semantic, cfg)

    return check


def check_continuation(
    piece: str,
    question: str,
    answer: str,
    contexts: Sequence[str],
    known_text: str,
    structure: AnswerStructure,
    semantic: Semantic | None,
    cfg: ContinuationSettings,
) -> ContinuationVerdict:
    """Final validation of a finished continuation before anything of it is appended."""
    problem = stream_monitor(question, answer, contexts, known_text, semantic, cfg)(piece)
    if problem:
        return ContinuationVerdict(False, problem.split(":")[0], problem)
    if semantic is None:
        return ContinuationVerdict(True)
    repeated = full_text_repetition(piece, answer, semantic, cfg)
    if repeated:
        return ContinuationVerdict(False, repeated)
    coherence = structure_coherence(
        piece, structure, semantic.similarities, cfg.off_plan_similarity, cfg.off_numbering_similarity
    )
    if not coherence.coherent:
        return ContinuationVerdict(False, coherence.reason, f"similarity={coherence.similarity:.2f}")
    return ContinuationVerdict(True)
