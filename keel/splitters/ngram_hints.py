"""n-gram importance and hint injection: important phrases marked in the text that is embedded.

Per document: every text run's font size is weighed against the document's population mean
(``(size / mean) ** font_scaling``), important bigrams and trigrams are found with NLTK's
collocation finders (likelihood ratio, no data downloads) and ranked by that score times their
font weight; n-grams set in a larger font than the body (headings) are candidates even when they
occur once. A child chunk that contains important n-grams gets an *embedding text*: its own text
followed by ``<important>n-gram</important>`` tags and the n-gram repeated. Only the embedding
sees the hints (``stores.chunk_store.EMBEDDING_TEXT_KEY``); users see the chunk's own text.

Whether this helps retrieval is measured by ``bench/ngram_hints.py``, not assumed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from keel.core.settings.ingestion import IngestionSettings

FONT_RUNS_KEY = "font_runs"  # page metadata: [[run_text, font_size_pt], ...]; never copied to chunks
_WORD = re.compile(r"[^\W\d_](?:[\w'’-]*\w)?", re.UNICODE)
_MIN_WORD_CHARS = 3
# Function words that make no n-gram important on their own (NLTK's list needs a data download).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also may might must shall upon via per within without among""".split()
)


def words_of(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters first; digits and punctuation split words)."""
    return [match.group(0).lower() for match in _WORD.finditer(text)]


def _is_content_word(word: str) -> bool:
    return len(word) >= _MIN_WORD_CHARS and word not in STOPWORDS


@dataclass(frozen=True)
class ImportantNgram:
    """A phrase the document stresses (frequent, or set in bold or a heading), with its score."""
    words: tuple[str, ...]
    score: float
    font_weight: float
    count: int

    @property
    def text(self) -> str:
        return " ".join(self.words)


def font_weights(pages: Sequence[Document], scaling: float) -> dict[str, float]:
    """Each word's largest run weight ``(size / mean) ** scaling``; the mean is the document's
    character-weighted mean font size. Empty when the loader recorded no font sizes."""
    runs = [(str(text), float(size)) for page in pages for text, size in page.metadata.get(FONT_RUNS_KEY) or ()
            if size and size > 0 and str(text).strip()]
    chars = sum(len(text) for text, _ in runs)
    if not chars:
        return {}
    mean = sum(len(text) * size for text, size in runs) / chars
    weights: dict[str, float] = {}
    for text, size in runs:
        weight = (size / mean) ** scaling
        for word in words_of(text):
            if weight > weights.get(word, 0.0):
                weights[word] = weight
    return weights


def heading_ngrams(pages: Sequence[Document], weights: dict[str, float], heading_weight: float) -> set[tuple[str, ...]]:
    """Bigrams and trigrams of content words inside runs whose weight reaches ``heading_weight``."""
    found: set[tuple[str, ...]] = set()
    for page in pages:
        for text, _size in page.metadata.get(FONT_RUNS_KEY) or ():
            run_words = words_of(str(text))
            if not run_words or min(weights.get(word, 1.0) for word in run_words) < heading_weight:
                continue
            for n in (2, 3):
                for i in range(len(run_words) - n + 1):
                    gram = tuple(run_words[i : i + n])
                    if _is_content_word(gram[0]) and _is_content_word(gram[-1]):
                        found.add(gram)
    return found


class NgramImportance:
    """Finds a document's important n-grams and writes the hinted embedding text of a chunk."""

    def __init__(
        self,
        max_ngrams: int | None = None,
        min_count: int | None = None,
        font_scaling: float | None = None,
        heading_weight: float | None = None,
        hint_repeats: int | None = None,
        max_hints_per_chunk: int | None = None,
    ):
        """Settings left as None come from ``IngestionSettings()`` (its ngram_* fields)."""
        cfg = IngestionSettings()
        max_ngrams = cfg.ngram_max_important if max_ngrams is None else max_ngrams
        min_count = cfg.ngram_min_count if min_count is None else min_count
        font_scaling = cfg.ngram_font_scaling if font_scaling is None else font_scaling
        heading_weight = cfg.ngram_heading_weight if heading_weight is None else heading_weight
        hint_repeats = cfg.ngram_hint_repeats if hint_repeats is None else hint_repeats
        max_hints_per_chunk = cfg.ngram_max_hints_per_chunk if max_hints_per_chunk is None else max_hints_per_chunk
        if max_ngrams < 0 or min_count < 1 or hint_repeats < 0 or max_hints_per_chunk < 0:
            raise ValueError("n-gram hint settings must not be negative (min_count at least 1)")
        self.max_ngrams = max_ngrams
        self.min_count = min_count
        self.font_scaling = font_scaling
        self.heading_weight = heading_weight
        self.hint_repeats = hint_repeats
        self.max_hints_per_chunk = max_hints_per_chunk

    @classmethod
    def from_config(cls, cfg: IngestionSettings) -> NgramImportance:
        return cls(
            max_ngrams=cfg.ngram_max_important,
            min_count=cfg.ngram_min_count,
            font_scaling=cfg.ngram_font_scaling,
            heading_weight=cfg.ngram_heading_weight,
            hint_repeats=cfg.ngram_hint_repeats,
            max_hints_per_chunk=cfg.ngram_max_hints_per_chunk,
        )

    def find(self, pages: Sequence[Document]) -> list[ImportantNgram]:
        """The document's important n-grams, most important first."""
        from nltk.collocations import BigramCollocationFinder, TrigramCollocationFinder
        from nltk.metrics import BigramAssocMeasures, TrigramAssocMeasures

        text_pages = [page for page in pages if page.metadata.get("multimodal_type", "text") == "text"]
        words = [word for page in text_pages for word in words_of(page.page_content)]
        if len(words) < 3 or self.max_ngrams == 0:
            return []
        weights = font_weights(text_pages, self.font_scaling)
        headings = heading_ngrams(text_pages, weights, self.heading_weight) if weights else set()
        scored: dict[tuple[str, ...], tuple[float, int]] = {}
        for finder_type, measure in ((BigramCollocationFinder, BigramAssocMeasures.likelihood_ratio),
                                     (TrigramCollocationFinder, TrigramAssocMeasures.likelihood_ratio)):
            finder = finder_type.from_words(words)
            counts = finder.ngram_fd
            finder.apply_ngram_filter(lambda *gram: not (_is_content_word(gram[0]) and _is_content_word(gram[-1])))
            finder.apply_ngram_filter(lambda *gram, counts=counts: counts[gram] < self.min_count and gram not in headings)
            for gram in finder.ngram_fd:
                try:
                    score = finder.score_ngram(measure, *gram)
                except (ValueError, ZeroDivisionError):  # NLTK's log of a degenerate contingency table
                    continue
                if score is not None:
                    scored[gram] = (score, counts[gram])
        ranked = []
        for gram, (score, count) in scored.items():
            weight = sum(weights.get(word, 1.0) for word in gram) / len(gram) if weights else 1.0
            ranked.append(ImportantNgram(gram, score * weight, weight, count))
        ranked.sort(key=lambda item: (-item.score, item.words))
        return _drop_contained(ranked)[: self.max_ngrams]

    def embedding_text(self, chunk_text: str, important: Iterable[ImportantNgram]) -> str | None:
        """``chunk_text`` with hints for the important n-grams it contains, or None if it has none."""
        if self.hint_repeats == 0 or self.max_hints_per_chunk == 0:
            return None
        chunk_words = words_of(chunk_text)
        grams = {tuple(chunk_words[i : i + n]) for n in (2, 3) for i in range(len(chunk_words) - n + 1)}
        present = [item.text for item in important if item.words in grams][: self.max_hints_per_chunk]
        if not present:
            return None
        hints = " ".join(f"<important>{gram}</important>" + f" {gram}" * (self.hint_repeats - 1) for gram in present)
        return f"{chunk_text}\n{hints}"


def _drop_contained(ranked: list[ImportantNgram]) -> list[ImportantNgram]:
    """Drop an n-gram already inside a better-ranked one (a bigram of a kept trigram)."""
    kept: list[ImportantNgram] = []
    covered: set[tuple[str, ...]] = set()
    for item in ranked:
        if item.words in covered:
            continue
        kept.append(item)
        covered.update(item.words[i : i + n] for n in (2, 3) for i in range(len(item.words) - n + 1))
    return kept
