"""Semantic deduplication of a continuation and stitching it onto the answer.

Every duplicate test needs BOTH high embedding similarity and high token overlap: a paraphrase
alone or shared wording alone is not a repetition. Token overlap is computed first and is cheap,
so the embedding model only sees the few pairs that could be duplicates: validation stays a small
fraction of generation time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from keel.checks.semantic import Semantic, token_overlap, words
from keel.core.settings.continuation import ContinuationSettings
from keel.core.text import split_sentences

SENTENCE_STARTERS = frozenset(
    "the a an it its this that these those there he she they we in on at for as after before during "
    "however when while although since if".split()
)


@dataclass
class DedupResult:
    """A continuation without what the answer already said, and what was dropped."""
    text: str  # only the new content of the continuation
    dropped: list[str] = field(default_factory=list)
    repetition: str | None = None  # "repetition" / "near_duplicate" when the whole piece repeats


def _is_duplicate(similarity: float, overlap: float, cfg: ContinuationSettings) -> bool:
    return (similarity > cfg.duplicate_sentence_similarity and overlap > cfg.duplicate_sentence_token_overlap) or (
        similarity > cfg.near_duplicate_similarity and overlap > cfg.near_duplicate_token_overlap
    )


def full_text_repetition(continuation: str, previous: str, semantic: Semantic, cfg: ContinuationSettings) -> str | None:
    """Full-text check: the whole continuation says again what is there."""
    overlap = token_overlap(continuation, previous)
    if overlap <= min(cfg.repetition_token_overlap, cfg.near_duplicate_token_overlap):
        return None
    similarity = semantic.similarity(continuation, previous)
    if similarity > cfg.repetition_similarity and overlap > cfg.repetition_token_overlap:
        return "repetition"
    if similarity > cfg.near_duplicate_similarity and overlap > cfg.near_duplicate_token_overlap:
        return "near_duplicate"
    return None


def _phrases(text: str, size: int) -> list[tuple[str, ...]]:
    tokens = words(text)
    return [tuple(tokens[i : i + size]) for i in range(max(0, len(tokens) - size + 1))]


def deduplicate(continuation: str, previous: str, semantic: Semantic, cfg: ContinuationSettings) -> DedupResult:
    """Keep only the sentences of ``continuation`` that ``previous`` (and earlier kept sentences)
    does not already say: sentence level, then 4-word phrase level; full text first."""
    repetition = full_text_repetition(continuation, previous, semantic, cfg)
    if repetition:
        return DedupResult("", split_sentences(continuation), repetition)
    seen = split_sentences(previous)
    size = cfg.dedup_phrase_words
    seen_phrases = {frozenset(p): " ".join(p) for s in seen for p in _phrases(s, size)}
    kept: list[str] = []
    dropped: list[str] = []
    floor = min(cfg.duplicate_sentence_token_overlap, cfg.near_duplicate_token_overlap)
    for sentence in split_sentences(continuation):
        candidates = [(s, token_overlap(sentence, s)) for s in seen]
        candidates = [(s, o) for s, o in candidates if o > floor]
        duplicate = False
        if candidates:
            similarities = semantic.similarities(sentence, [s for s, _ in candidates])
            duplicate = any(_is_duplicate(sim, o, cfg) for sim, (_, o) in zip(similarities, candidates, strict=False))
        if not duplicate:
            duplicate = _phrase_duplicate(sentence, seen_phrases, semantic, cfg)
        if duplicate:
            dropped.append(sentence)
            continue
        kept.append(sentence)
        seen.append(sentence)
        seen_phrases.update({frozenset(p): " ".join(p) for p in _phrases(sentence, size)})
    return DedupResult(_rejoin(continuation, kept), dropped)


def _phrase_duplicate(sentence: str, seen_phrases: dict, semantic: Semantic, cfg: ContinuationSettings) -> bool:
    """Most of the sentence's 4-word phrases already said (same words, and semantically > 0.9)."""
    phrases = _phrases(sentence, cfg.dedup_phrase_words)
    if not phrases:
        return False
    # 4 words with token overlap > 0.9 means the same four words: a set lookup finds them.
    repeated = [(" ".join(p), seen_phrases[frozenset(p)]) for p in phrases if frozenset(p) in seen_phrases]
    if len(repeated) / len(phrases) < cfg.phrase_duplicate_share:
        return False
    confirmed = sum(
        1 for new, old in repeated if new == old or semantic.similarity(new, old) > cfg.duplicate_sentence_similarity
    )
    return confirmed / len(phrases) >= cfg.phrase_duplicate_share


def _rejoin(original: str, kept: list[str]) -> str:
    """The kept sentences with the original's line structure where it had any (lists stay lists)."""
    if not kept:
        return ""
    if "\n" not in original.strip():
        return " ".join(kept)
    lines = []
    for line in original.strip().splitlines():
        parts = [s for s in split_sentences(line) if s in kept]
        if parts:
            lines.append(" ".join(parts))
        elif not line.strip():
            lines.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def stitch(answer: str, continuation: str, restart_overlap: float = ContinuationSettings.stitch_restart_overlap) -> str:
    """Join a continuation to the answer so far, mending a sentence the token limit cut in two.

    A continuation that starts in lower case or with punctuation finishes the cut sentence; one
    that restarts the cut sentence replaces it; one that starts a new sentence drops the fragment.
    """
    piece = continuation.strip()
    if not piece:
        return answer
    if not answer.strip():
        return piece
    body = answer.rstrip()
    boundaries = [m.end() for m in re.finditer(r"[.!?][\"')\]]*\s+|\n", body)]
    fragment = body[boundaries[-1]:] if boundaries else body
    ends_sentence = bool(re.search(r"([.!?][\"')\]]*|\[Source \d+\])$", body))
    new_block = re.match(r"(\d{1,2}[.):]\s|[-*\u2022]\s|#)", piece) is not None
    if ends_sentence or not fragment or new_block:
        return body + ("\n" if new_block or re.search(r"\n\s*(\d{1,2}[.):]|[-*\u2022])\s[^\n]*$", body) else " ") + piece
    first_word = (re.match(r"[\w'-]+", piece) or [""])[0]
    if piece[0] in ",.;:!?)" or piece[0].islower():
        return body + ("" if piece[0] in ",.;:!?)" else " ") + piece
    first_sentence = (split_sentences(piece) or [piece])[0]
    restarted = token_overlap(fragment, first_sentence) >= restart_overlap
    if restarted or first_word.lower() in SENTENCE_STARTERS:
        # the model restarted the cut sentence, or began a new one: the fragment goes
        return (body[: len(body) - len(fragment)].rstrip() + " " + piece).strip()
    return body + " " + piece  # "It was built by" + "Mara Holt in 1874."
